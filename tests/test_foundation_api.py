"""The foundation through the API: lanes, snapshots, transitions, history."""

from __future__ import annotations

import pytest
from conftest import git, workspace

from git_lanes.errors import Conflict, NotFound, Refused, StaleState, UserError
from git_lanes.model.records import Cost


def test_commit_proposes_then_accept_moves_lane_and_workspace_head(api, repo):
    api.lane_create("feat")
    ws = workspace(repo, "feat")
    (ws / "new.txt").write_text("new\n")
    record = api.commit("Add new file", "coder-1", lane="feat", cost=Cost(tokens_in=5, cost_usd=0.5))
    assert record["status"] == "proposed"
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip() == record["from"]
    accepted = api.accept(record["id"][:6])
    assert accepted["status"] == "accepted"
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip() == record["to"]
    assert git("rev-parse", "HEAD", cwd=ws).strip() == record["to"]
    assert git("status", "--porcelain", cwd=ws) == ""


def test_unchanged_workspace_makes_no_state(api, repo):
    api.lane_create("feat")
    assert api.commit("nothing", "a", lane="feat")["status"] == "unchanged"


def test_accept_of_a_proposal_whose_lane_moved_is_a_conflict(api, repo):
    api.lane_create("feat")
    ws = workspace(repo, "feat")
    (ws / "a.txt").write_text("1\n")
    first = api.commit("one", "a", lane="feat")
    api.reject(first["id"])
    api.restore("feat", lane="feat", force=True)
    (ws / "a.txt").write_text("2\n")
    second = api.commit("two", "a", lane="feat")
    # someone else moves the lane in between
    other = api.lane_create("other")
    (workspace(repo, "other") / "b.txt").write_text("b\n")
    moved = api.commit("other", "b", lane="other", auto_accept=True)
    git("update-ref", "refs/lanes/heads/feat", moved["to"], second["from"], cwd=repo)
    with pytest.raises(Conflict) as raised:
        api.accept(second["id"])
    assert raised.value.code == "stale_proposal"


def test_stale_workspace_is_refused(api, repo):
    api.lane_create("feat")
    ws = workspace(repo, "feat")
    api.lane_create("other")
    (workspace(repo, "other") / "b.txt").write_text("b\n")
    moved = api.commit("other", "b", lane="other", auto_accept=True)
    old = git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip()
    git("update-ref", "refs/lanes/heads/feat", moved["to"], old, cwd=repo)
    (ws / "x.txt").write_text("x\n")
    with pytest.raises(Conflict) as info:
        api.commit("stale", "a", lane="feat")
    assert info.value.code == "stale_workspace"


def test_reject_keeps_attempt_as_signal(api, repo):
    api.lane_create("feat")
    (workspace(repo, "feat") / "bad.txt").write_text("bad\n")
    record = api.commit("bad idea", "a", lane="feat")
    api.reject(record["id"], "wrong")
    assert git("rev-parse", f"refs/lanes/rejected/{record['id']}", cwd=repo).strip() == record["to"]
    shown = api.show(record["id"][:5])
    assert shown["status"] == "rejected" and shown["reason"] == "wrong"
    assert [c["path"] for c in shown["changes"]] == ["bad.txt"]
    with pytest.raises(StaleState) as raised:
        api.accept(record["id"])
    assert raised.value.code == "already_decided"


def test_history_filters_and_totals(api, repo):
    api.lane_create("feat")
    ws = workspace(repo, "feat")
    for i, agent in enumerate(["a", "b", "a"]):
        (ws / f"{i}.txt").write_text(str(i))
        api.commit(f"step {i}", agent, lane="feat", cost=Cost(tokens_in=10, cost_usd=0.25), auto_accept=True)
    result = api.history(lane="feat", agent="a")
    assert [t["intent"]["prompt"] for t in result["transitions"]] == ["step 2", "step 0"]
    assert result["totals"]["tokens_in"] == 20 and result["totals"]["cost_usd"] == 0.5
    assert len(api.history(lane="feat", limit=1)["transitions"]) == 1
    assert api.history(lane="feat", limit=1)["totals"]["count"] == 3


def test_restore_refuses_unsaved_edits_then_keeps_backup_with_force(api, repo):
    api.lane_create("feat")
    ws = workspace(repo, "feat")
    (ws / "f.txt").write_text("v1\n")
    first = api.commit("v1", "a", lane="feat", auto_accept=True)
    (ws / "f.txt").write_text("v2\n")
    api.commit("v2", "a", lane="feat", auto_accept=True)
    (ws / "f.txt").write_text("typing...\n")
    with pytest.raises(Refused) as raised:
        api.restore(first["id"], lane="feat")
    assert raised.value.code == "dirty_workspace"
    assert (ws / "f.txt").read_text() == "typing...\n"
    result = api.restore(first["id"], lane="feat", force=True)
    assert (ws / "f.txt").read_text() == "v1\n"
    assert git("show", f"{result['backup']}:f.txt", cwd=repo) == "typing...\n"
    again = api.commit("back to v1", "a", lane="feat", auto_accept=True)
    assert again["status"] == "accepted"


def test_restore_over_a_folder_holding_a_file_named_in_another_encoding(api, repo):
    """A folder the restored state has as a file, holding an untracked Latin-1 `café` (bytes git takes as a
    name): asking the ignore rules about it handed the name to pygit2, which encodes strictly, and the
    restore failed as an internal error (exit 6) instead of refusing, or with force keeping it."""
    import os

    api.lane_create("feat")
    ws = workspace(repo, "feat")
    (ws / "src").rename(ws / "old-src")
    (ws / "src").write_text("now a file\n")
    as_file = api.commit("src becomes a file", "a", lane="feat", auto_accept=True)
    api.restore("main", lane="feat", force=True)
    latin = os.fsencode(ws / "src") + b"/caf\xe9.txt"
    with open(latin, "wb") as handle:
        handle.write(b"untracked\n")
    with pytest.raises(Refused) as raised:
        api.restore(as_file["id"], lane="feat")
    assert raised.value.code == "dirty_workspace" and os.path.exists(latin)
    result = api.restore(as_file["id"], lane="feat", force=True)
    assert (ws / "src").read_text() == "now a file\n"
    kept = git("ls-tree", "-r", "--name-only", result["backup"], cwd=repo).splitlines()
    assert '"src/caf\\351.txt"' in kept  # the backup holds it (git quotes the byte it cannot print)


def test_lane_delete_guards_work(api, repo):
    api.lane_create("feat")
    ws = workspace(repo, "feat")
    (ws / "w.txt").write_text("w\n")
    with pytest.raises(Refused) as raised:
        api.lane_delete("feat")
    assert raised.value.code == "dirty_workspace"
    api.commit("work", "a", lane="feat", auto_accept=True)
    with pytest.raises(Refused) as info:
        api.lane_delete("feat")
    assert info.value.code == "unpromoted"
    head = git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip()
    result = api.lane_delete("feat", force=True)
    assert not ws.exists()
    assert git("rev-parse", "refs/lanes/deleted/feat", cwd=repo).strip() == head
    assert head in git("reflog", "show", "--format=%H", "refs/lanes/deleted/feat", cwd=repo)
    assert "feat" not in git("worktree", "list", cwd=repo)
    assert result["kept_at"] == "refs/lanes/deleted/feat"


def test_trunk_commit_from_main_worktree(api, repo):
    (repo / "README.md").write_text("# changed\n")
    record = api.commit("Edit readme", "human", cwd=repo, auto_accept=True)
    assert record["lane"] == "main"
    assert git("rev-parse", "main", cwd=repo).strip() == record["to"]
    assert git("status", "--porcelain", cwd=repo) == ""


@pytest.mark.parametrize("name", ["a..b", "-x", "x.lock", "a b", "HEAD", "", "a/", "a//b", "x~1", "c:d"])
def test_bad_lane_names_are_refused_and_write_nothing(api, repo, name):
    before = git("for-each-ref", cwd=repo)
    with pytest.raises(UserError) as raised:
        api.lane_create(name)
    assert raised.value.code == "invalid_lane_name"
    assert git("for-each-ref", cwd=repo) == before


def test_ambiguous_and_unknown_ids(api, repo):
    api.lane_create("feat")
    ws = workspace(repo, "feat")
    ids = []
    for i in range(40):
        (ws / "n.txt").write_text(str(i))
        ids.append(api.commit(f"n{i}", "a", lane="feat", auto_accept=True)["id"])
    first_chars = [i[0] for i in ids]
    shared = next(c for c in first_chars if first_chars.count(c) > 1)
    from git_lanes.errors import Ambiguous

    with pytest.raises(Ambiguous) as raised:
        api.show(shared)
    assert raised.value.code == "ambiguous"
    with pytest.raises(NotFound) as raised:
        api.show("zzzz")
    assert raised.value.code == "not_found"


def test_a_lane_and_a_lane_named_like_its_folder_can_both_be_deleted(api, repo):
    """Deletion markers are flat names: deleting `p/q`, then a later lane `p`, must not clash as a file and a
    folder under refs/lanes/deleted/."""
    api.lane_create("p/q")
    api.lane_delete("p/q")
    api.lane_create("p")
    result = api.lane_delete("p")
    assert result["kept_at"] == "refs/lanes/deleted/p"
    assert git("rev-parse", "--verify", "refs/lanes/deleted/p%2Fq", cwd=repo).strip()
    assert git("rev-parse", "--verify", "refs/lanes/deleted/p", cwd=repo).strip()
