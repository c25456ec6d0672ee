"""Sync through a real git server on loopback (git daemon) and file:// remotes; clones play machines."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, run_cli, workspace
from gitserver import clone, make_origin, server  # noqa: F401  (server is a fixture)

from git_lanes.api import Lanes
from git_lanes.model.sync_results import SyncReport

SYNCED = ("refs/heads/main", "refs/lanes/", "refs/notes/lanes")


def synced_refs(path: Path) -> dict[str, str]:
    """Every ref that travels, as `git for-each-ref` sees it (a bare server repository works too)."""
    out = git("for-each-ref", "--format=%(objectname) %(refname)", cwd=path)
    found = {}
    for line in out.splitlines():
        oid, name = line.split(" ", 1)
        # The operation log is each machine's own record of what it did there (undo): it never travels.
        if name.startswith(SYNCED) and not name.startswith("refs/lanes/backups/") and name != "refs/lanes/oplog":
            found[name] = oid
    return found


def edit_and_accept(repo: Path, lane: str, path: str, text: str, agent: str = "coder-1") -> dict:
    api = Lanes(repo)
    if lane != api.trunk and not workspace(repo, lane).exists():
        api.lane_create(lane)
    root = repo if lane == api.trunk else workspace(repo, lane)
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)
    return api.commit(f"write {path}", agent, lane=lane, auto_accept=True)


@pytest.fixture
def machines(tmp_path: Path, server):  # noqa: F811
    """An origin machine that pushed its lanes to the daemon, and a plain clone of it set up by `pull`."""
    url = server.bare("project")
    origin = make_origin(tmp_path, url)
    edit_and_accept(origin, "feat", "feat.txt", "feature\n")
    Lanes(origin).sync()
    other = clone(tmp_path, url, "machine-b")
    return origin, other, server


def test_clone_then_pull_gives_every_piece_of_lane_state(tmp_path, server):  # noqa: F811
    url = server.bare("project")
    origin = make_origin(tmp_path, url)
    api = Lanes(origin)
    edit_and_accept(origin, "feat", "feat.txt", "feature\n")
    (workspace(origin, "feat") / "pending.txt").write_text("pending\n")
    pending = api.commit("pending work", "coder-2", lane="feat")
    edit_and_accept(origin, "other", "o.txt", "o\n")
    (workspace(origin, "other") / "bad.txt").write_text("bad\n")
    rejected = api.commit("bad idea", "coder-3", lane="other")
    api.reject(rejected["id"], "not wanted")
    report = api.sync()
    assert isinstance(report, SyncReport) and report.mode == "sync" and report.went_out
    assert report["attempts"] == 1 and report["diverged"] == []
    assert synced_refs(server.path("project")) == synced_refs(origin)

    other = clone(tmp_path, url, "machine-b")
    result = run_cli("pull", "--json", cwd=other)
    assert result.code == 0, result.err
    assert result.json["initialized"] is True
    assert synced_refs(other) == synced_refs(origin)
    mine = Lanes(other)
    assert [lane["name"] for lane in mine.lane_list()] == ["main", "feat", "other"]
    assert mine.show(pending["id"][:8])["status"] == "proposed"
    assert mine.show(rejected["id"][:8])["reason"] == "not wanted"
    assert mine.history()["totals"] == api.history()["totals"]
    # the clone can take up a lane pulled from elsewhere
    mine.lane_create("feat")
    assert (workspace(other, "feat") / "feat.txt").read_text() == "feature\n"
    assert run_cli("sync", cwd=other).out.strip() == "synced with origin: already up to date"


def test_lane_fast_forwards_and_a_clean_workspace_follows(machines):
    origin, other, _ = machines
    mine = Lanes.open_for_sync(other)[0]
    mine.pull()
    mine.lane_create("feat")
    (workspace(other, "feat") / "untouched-edit.txt").write_text("mine\n")
    edit_and_accept(origin, "feat", "feat.txt", "feature v2\n")
    edit_and_accept(origin, "main", "README.md", "# project v2\n")
    Lanes(origin).sync()

    report = mine.sync()
    kinds = {(m["kind"], m["name"], m["how"]) for m in report["came_in"]}
    assert {("lane", "feat", "fast-forward"), ("lane", "main", "fast-forward")} <= kinds
    assert (workspace(other, "feat") / "feat.txt").read_text() == "feature v2\n"
    assert (workspace(other, "feat") / "untouched-edit.txt").read_text() == "mine\n"
    assert git("rev-parse", "HEAD", cwd=workspace(other, "feat")).strip() == \
        git("rev-parse", "refs/lanes/heads/feat", cwd=other).strip()
    assert (other / "README.md").read_text() == "# project v2\n"
    assert git("status", "--porcelain", "--untracked-files=no", cwd=other) == ""


def test_workspace_with_edits_in_the_way_is_reported_and_kept(machines):
    origin, other, _ = machines
    mine = Lanes.open_for_sync(other)[0]
    mine.pull()
    mine.lane_create("feat")
    (workspace(other, "feat") / "feat.txt").write_text("my unsaved edit\n")
    edit_and_accept(origin, "feat", "feat.txt", "feature v2\n")
    Lanes(origin).sync()

    report = mine.sync()
    stale = [w for w in report["workspaces"] if w["lane"] == "feat"]
    assert stale and stale[0]["status"] == "stale"
    assert (workspace(other, "feat") / "feat.txt").read_text() == "my unsaved edit\n"
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=other).strip() == \
        git("rev-parse", "refs/lanes/heads/feat", cwd=origin).strip()


def test_trunk_with_edits_in_the_way_is_not_moved(machines):
    origin, other, _ = machines
    mine = Lanes.open_for_sync(other)[0]
    before = git("rev-parse", "main", cwd=other).strip()
    (other / "README.md").write_text("local edit\n")
    edit_and_accept(origin, "main", "README.md", "# project v2\n")
    Lanes(origin).sync()

    report = mine.pull()
    assert [w["status"] for w in report["workspaces"] if w["lane"] == "main"] == ["blocked"]
    assert git("rev-parse", "main", cwd=other).strip() == before
    assert (other / "README.md").read_text() == "local edit\n"
    # the trunk that did not come in is not "already up to date"
    text = run_cli("sync", cwd=other)
    assert text.code == 0 and "already up to date" not in text.out, text.out
    assert "workspace of main blocked: unsaved edits: README.md" in text.out


def test_diverged_lane_is_reported_nothing_overwritten_and_exit_3(machines):
    origin, other, server = machines
    Lanes.open_for_sync(other)[0].pull()
    edit_and_accept(origin, "feat", "a.txt", "origin\n")
    Lanes(origin).sync()
    edit_and_accept(other, "feat", "b.txt", "other\n")
    local_head = git("rev-parse", "refs/lanes/heads/feat", cwd=other).strip()
    remote_head = git("rev-parse", "refs/lanes/heads/feat", cwd=server.path("project")).strip()

    result = run_cli("sync", "--json", cwd=other)
    assert result.code == 3, result.err
    diverged = result.json["diverged"]
    assert [(d["kind"], d["name"], d["local"], d["remote"]) for d in diverged] == \
        [("lane", "feat", local_head, remote_head)]
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=other).strip() == local_head
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=server.path("project")).strip() == remote_head
    # everything else still travelled: the notes for both sides' transitions are on both sides
    assert "notes" in {m["kind"] for m in result.json["went_out"]}
    text = run_cli("sync", cwd=other)
    assert text.code == 3 and "diverged lane feat" in text.out
    # the way on that the report prints: the remote's head as a lane, promoted in with promotion's rules
    hint = next(line for line in text.out.splitlines() if "to merge:" in line).split("to merge: ")[1]
    for command in hint.split(" && "):
        step = run_cli(*command.split()[2:], cwd=other)
        assert step.code == 0, step.err
    assert run_cli("sync", cwd=other).code == 0
    Lanes(origin).sync()
    assert synced_refs(origin)["refs/lanes/heads/feat"] == synced_refs(other)["refs/lanes/heads/feat"]
    merged = synced_refs(origin)["refs/lanes/heads/feat"]
    assert git("show", f"{merged}:a.txt", cwd=origin) == "origin\n"
    assert git("show", f"{merged}:b.txt", cwd=origin) == "other\n"


def test_proposal_decided_on_one_machine_disappears_as_decided_on_both(machines):
    origin, other, server = machines
    api = Lanes(origin)
    (workspace(origin, "feat") / "p.txt").write_text("p\n")
    accepted = api.commit("to accept", "coder-1", lane="feat")
    edit_and_accept(origin, "other", "q.txt", "q\n")
    (workspace(origin, "other") / "r.txt").write_text("r\n")
    rejected = api.commit("to reject", "coder-2", lane="other")
    api.sync()

    mine = Lanes.open_for_sync(other)[0]
    mine.pull()
    assert {p["id"] for p in mine.lane_show("feat")["proposals"]} == {accepted["id"]}
    mine.accept(accepted["id"][:8])   # decided on the clone ...
    api.reject(rejected["id"], "no")  # ... and the other one on the origin, so the notes diverge
    mine.sync()
    report = api.sync()
    assert report["notes"]["merged"] >= 1
    mine.sync()
    for repo in (origin, other, server.path("project")):
        assert git("for-each-ref", "refs/lanes/proposals/", cwd=repo) == ""
    assert synced_refs(origin) == synced_refs(other) == synced_refs(server.path("project"))
    notes_head = git("rev-parse", "refs/notes/lanes", cwd=origin).strip()
    assert len(git("rev-list", "--parents", "-n1", notes_head, cwd=origin).split()) == 3  # a merge
    for repo in (origin, other):
        assert Lanes(repo).show(accepted["id"])["status"] == "accepted"
        assert Lanes(repo).show(rejected["id"])["status"] == "rejected"
    assert (workspace(origin, "feat") / "p.txt").read_text() == "p\n"


def test_lane_deleted_on_one_machine_is_deleted_on_the_remote_and_elsewhere(machines):
    origin, other, server = machines
    mine = Lanes.open_for_sync(other)[0]
    mine.pull()
    edit_and_accept(origin, "main", "merged.txt", "x\n")
    Lanes(origin).lane_delete("feat", force=True)
    Lanes(origin).sync()
    assert "refs/lanes/heads/feat" not in synced_refs(server.path("project"))
    assert "refs/lanes/deleted/feat" in synced_refs(server.path("project"))
    mine.sync()
    assert "refs/lanes/heads/feat" not in synced_refs(other)
    assert synced_refs(other) == synced_refs(server.path("project"))


def test_push_moves_only_what_is_ahead_and_holds_back_merges(machines):
    origin, other, server = machines
    mine = Lanes.open_for_sync(other)[0]
    mine.pull()
    edit_and_accept(origin, "feat", "a.txt", "a\n")
    Lanes(origin).sync()
    edit_and_accept(other, "fresh", "f.txt", "f\n")
    before = synced_refs(other)
    report = mine.push()
    assert report["came_in"] == []
    assert synced_refs(other) == before  # a push changes nothing here
    out = {(m["kind"], m["name"]) for m in report["went_out"]}
    assert ("lane", "fresh") in out
    held = {(m["kind"], m["name"]) for m in report["held_back"]}
    assert ("lane", "feat") in held and ("notes", "lanes") in held
    assert "refs/lanes/heads/fresh" in synced_refs(server.path("project"))


def test_file_remote_and_unknown_remote(tmp_path):
    bare = tmp_path / "bare.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    origin = make_origin(tmp_path, f"file://{bare}")
    edit_and_accept(origin, "feat", "f.txt", "f\n")
    assert run_cli("sync", cwd=origin).code == 0
    assert synced_refs(bare) == synced_refs(origin)
    other = clone(tmp_path, f"file://{bare}", "b")
    assert run_cli("pull", cwd=other).code == 0
    assert synced_refs(other) == synced_refs(origin)
    third = clone(tmp_path, f"file://{bare}", "c")  # the other path: init first (it takes the checked-out trunk)
    assert run_cli("init", cwd=third).code == 0
    assert run_cli("pull", cwd=third).code == 0
    assert synced_refs(third) == synced_refs(origin)
    missing = run_cli("sync", "nowhere", cwd=other)
    assert missing.code == 1 and "no remote named 'nowhere'" in missing.err
    git("remote", "add", "broken", str(tmp_path / "absent.git"), cwd=other)
    broken = run_cli("pull", "broken", "--json", cwd=other)
    assert broken.code == 5 and broken.json["error"] == "remote_failed"


@pytest.mark.parametrize("command", ["sync", "pull", "push"])
def test_an_empty_remote_name_is_refused_not_taken_for_origin(tmp_path, command):
    """`git lanes sync "$REMOTE"` with REMOTE unset synced with origin, where `git push ""` and `git fetch ""`
    refuse: only a remote not given defaults."""
    bare = tmp_path / "bare.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    origin = make_origin(tmp_path, f"file://{bare}")
    edit_and_accept(origin, "feat", "f.txt", "f\n")
    before = synced_refs(bare), synced_refs(origin)
    result = run_cli(command, "", "--json", cwd=origin)
    assert result.code == 1 and result.json["error"] == "invalid_remote", result.err
    assert (synced_refs(bare), synced_refs(origin)) == before


def test_a_lane_recreated_after_its_deletion_travels_and_a_diverged_marker_is_only_reported(machines):
    origin, other, server = machines
    mine = Lanes.open_for_sync(other)[0]
    mine.pull()
    Lanes(origin).lane_delete("feat", force=True)
    Lanes(origin).sync()
    mine.sync()
    assert "refs/lanes/heads/feat" not in synced_refs(other)
    # the name is taken again here, after this machine heard of the deletion: a new lane, so it travels
    mine.lane_create("feat")
    report = mine.sync()
    assert ("lane", "feat", "created") in {(m["kind"], m["name"], m["how"]) for m in report["went_out"]}
    assert report["kept"] == []
    Lanes(origin).sync()
    assert synced_refs(origin)["refs/lanes/heads/feat"] == synced_refs(other)["refs/lanes/heads/feat"]
    # the new lane gets its own work and is deleted too: the two deletion markers have diverged
    edit_and_accept(other, "feat", "new.txt", "new\n")
    mine.lane_delete("feat", force=True)
    result = run_cli("sync", "--json", cwd=other)
    assert result.code == 0, result.out
    assert [(d["kind"], d["name"]) for d in result.json["diverged"]] == [("deleted", "feat")]
    assert "refs/lanes/heads/feat" not in synced_refs(server.path("project"))


def test_evaluations_made_on_two_machines_are_united(machines):
    origin, other, _ = machines
    gate = '[[gate]]\nname = "unique"\ncommand = "python3 -c \'import uuid; print(uuid.uuid4())\'"\n'
    api = Lanes(origin)
    api.accept(edit_and_accept(origin, "main", ".lanes.toml", gate)["id"])  # protected: accepted by a person
    (workspace(origin, "feat") / "p.txt").write_text("p\n")
    pending = api.commit("to evaluate", "coder-1", lane="feat")
    api.sync()
    mine = Lanes.open_for_sync(other)[0]
    mine.pull()
    api.evaluate(pending["id"])
    mine.evaluate(pending["id"])
    api.sync()
    report = mine.sync()
    assert report["notes"]["merged"] == 1
    api.sync()
    for repo in (origin, other):
        evaluations = Lanes(repo).show(pending["id"])["evaluations"]
        assert len(evaluations) == 2 and len({e["output_tail"] for e in evaluations}) == 2


def test_push_face_reports_what_it_held_back_and_the_json_record_is_stable(machines):
    origin, other, _ = machines
    Lanes.open_for_sync(other)[0].pull()
    edit_and_accept(origin, "feat", "a.txt", "a\n")
    Lanes(origin).sync()
    edit_and_accept(other, "fresh", "f.txt", "f\n")
    text = run_cli("push", cwd=other)
    assert text.code == 0, text.err
    assert text.out.splitlines()[0] == "pushed to origin: 0 refs came in, 1 went out"
    assert "  out lane fresh: created" in text.out
    assert "  held back lane feat (local): run `git lanes sync`" in text.out
    result = run_cli("sync", "--json", cwd=other)
    assert result.code == 0, result.err
    assert set(result.json) == {"remote", "mode", "attempts", "came_in", "went_out", "held_back", "diverged",
                                "kept", "invalid", "problem", "refused", "workspaces", "notes", "ledger", "initialized",
                                "trunk"}
    assert result.json["mode"] == "sync" and result.json["initialized"] is False
    assert set(result.json["ledger"]) == {"came_in", "went_out", "replayed", "refused"}
    assert {"kind", "name", "ref", "from", "to", "how"} == set(result.json["came_in"][0])
