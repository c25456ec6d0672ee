"""A checked-out target after a promotion: untouched files follow, files with unsaved edits are left as the
person typed them, and a later commit from that worktree must never silently revert the promoted change."""

from __future__ import annotations

import pytest
from conftest import git, workspace
from promotion_fixtures import edit, head, land, trunk_file

from git_lanes.domain import attention, promotion, transitions
from git_lanes.errors import Conflict


def _promote_app_change(api, repo, lane="a", target=None):
    land(api, repo, lane, {"src/app.py": "print('promoted')\n", "other.txt": "o\n"})
    return api.promote(lane, target, auto_accept=True)


def test_unsaved_edits_in_the_trunk_worktree_are_left_and_reported(api, repo):
    edit(repo, {"src/app.py": "print('typed by a person')\n"})
    result = _promote_app_change(api, repo)
    assert result["status"] == "accepted"
    assert trunk_file(repo, "src/app.py") == "print('promoted')\n"
    assert (repo / "src/app.py").read_text() == "print('typed by a person')\n"
    assert result["worktree"]["attention"] == ["src/app.py"]
    assert result["worktree"]["updated"] == ["other.txt"]
    # git shows the person's edits against the promoted version
    assert "-print('promoted')" in git("diff", "--", "src/app.py", cwd=repo)


def test_a_commit_from_the_stale_trunk_worktree_is_refused_until_merged(api, repo):
    edit(repo, {"src/app.py": "print('typed by a person')\n"})
    _promote_app_change(api, repo)
    edit(repo, {"notes.txt": "unrelated\n"})
    with pytest.raises(Conflict) as info:
        api.commit("from the main worktree", "human", cwd=repo)
    assert info.value.code == "unmerged_promotion" and info.value.details["paths"] == ["src/app.py"]
    # the person merges the promoted change into their edit and stages it: that is their answer
    edit(repo, {"src/app.py": "print('promoted')\nprint('typed by a person')\n"})
    git("add", "src/app.py", cwd=repo)
    record = api.commit("from the main worktree", "human", cwd=repo, auto_accept=True)
    assert record["status"] == "accepted"
    assert trunk_file(repo, "src/app.py") == "print('promoted')\nprint('typed by a person')\n"


def test_taking_the_promoted_version_clears_the_refusal(api, repo):
    edit(repo, {"src/app.py": "print('typed by a person')\n"})
    _promote_app_change(api, repo)
    git("checkout", "--", "src/app.py", cwd=repo)
    edit(repo, {"notes.txt": "n\n"})
    assert api.commit("notes", "human", cwd=repo, auto_accept=True)["status"] == "accepted"
    assert trunk_file(repo, "src/app.py") == "print('promoted')\n"


def test_unsaved_edits_in_a_target_lane_workspace_are_left_and_guarded(api, repo):
    api.lane_create("target")
    ws = workspace(repo, "target")
    edit(ws, {"src/app.py": "print('agent draft')\n"})
    result = _promote_app_change(api, repo, target="target")
    assert result["worktree"]["attention"] == ["src/app.py"]
    assert (ws / "src/app.py").read_text() == "print('agent draft')\n"
    assert (ws / "other.txt").read_text() == "o\n"
    with pytest.raises(Conflict) as info:
        api.commit("draft", "agent", lane="target")
    assert info.value.code == "unmerged_promotion"


def test_a_promotion_killed_before_its_worktree_update_is_finished_by_the_next_commit(api, repo):
    """The window between the target's ref move and the file writes: the main worktree still holds the old
    content with HEAD (symbolic) already on the new state, so a naive snapshot would revert the promotion."""
    land(api, repo, "a", {"src/app.py": "print('promoted')\n"})
    ctx = api.ctx
    with ctx.store.locked():
        plan = promotion.plan(ctx, "a", "main")
        record = promotion.propose(ctx, plan, api_intent(), api_cost(), force=False)
        attention.prepare(ctx, record)
        transitions.accept(ctx, record)  # ...and the process dies here
    assert (repo / "src/app.py").read_text() == "print('hello')\n"
    edit(repo, {"notes.txt": "n\n"})
    committed = api.commit("notes", "human", cwd=repo, auto_accept=True)
    assert committed["status"] == "accepted"
    assert trunk_file(repo, "src/app.py") == "print('promoted')\n"
    assert (repo / "src/app.py").read_text() == "print('promoted')\n"


def test_a_file_written_after_a_killed_promotion_noted_it_is_left_for_attention(api, repo):
    land(api, repo, "a", {"src/app.py": "print('promoted')\n"})
    ctx = api.ctx
    with ctx.store.locked():
        record = promotion.propose(ctx, promotion.plan(ctx, "a", "main"), api_intent(), api_cost(), force=False)
        attention.prepare(ctx, record)
        transitions.accept(ctx, record)  # ...and the process dies here
    # someone writes the old content again, on purpose: not ours to overwrite
    (repo / "src/app.py").unlink()
    (repo / "src/app.py").write_text("print('hello')\n")
    with pytest.raises(Conflict) as info:
        api.commit("revert?", "human", cwd=repo)
    assert info.value.details["paths"] == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == "print('hello')\n"


def test_a_record_left_by_a_promotion_that_never_landed_is_ignored(api, repo):
    land(api, repo, "a", {"src/app.py": "print('promoted')\n"})
    ctx = api.ctx
    before = head(repo, "main")
    with ctx.store.locked():
        plan = promotion.plan(ctx, "a", "main")
        record = promotion.propose(ctx, plan, api_intent(), api_cost(), force=False)
        attention.prepare(ctx, record)  # ...and the process dies before the ref moves
    edit(repo, {"notes.txt": "n\n"})
    assert api.commit("notes", "human", cwd=repo, auto_accept=True)["status"] == "accepted"
    assert (repo / "src/app.py").read_text() == "print('hello')\n"
    assert git("rev-parse", "HEAD~1", cwd=repo).strip() == before
    assert not (repo / ".git" / attention.RECORD).exists()


def api_intent():
    from git_lanes.model.records import Intent

    return Intent(prompt="promote a", agent_id="lead")


def api_cost():
    from git_lanes.model.records import Cost

    return Cost()


def test_a_folder_the_lane_replaced_by_a_file_is_replaced_in_the_clean_trunk_worktree(api, repo):
    # The trunk worktree holds src/ untouched; the lane turns src/ into a file. Noting "src" while it was
    # still a folder must not make the file look written since: the worktree follows, nothing needs attention.
    api.lane_create("a")
    edit(workspace(repo, "a"), {"src": None})
    edit(workspace(repo, "a"), {"src": "now a file\n"})
    api.commit("src becomes a file", "agent-a", lane="a", auto_accept=True)
    result = api.promote("a", None, auto_accept=True)
    assert result["worktree"]["attention"] == []
    assert (repo / "src").read_text() == "now a file\n"
    assert git("status", "--porcelain", cwd=repo) == ""


def test_a_folder_holding_an_untracked_file_stays_when_the_lane_replaced_it_by_a_file(api, repo):
    edit(repo, {"src/mine.txt": "typed by a person\n"})
    api.lane_create("a")
    edit(workspace(repo, "a"), {"src": None})
    edit(workspace(repo, "a"), {"src": "now a file\n"})
    api.commit("src becomes a file", "agent-a", lane="a", auto_accept=True)
    result = api.promote("a", None, auto_accept=True)
    assert result["worktree"]["attention"] == ["src"]
    assert (repo / "src" / "mine.txt").read_text() == "typed by a person\n"


def test_a_file_named_in_another_encoding_is_promoted_into_the_clean_trunk_worktree(repo):
    """git takes any bytes as a file name (a Latin-1 `café` made on another machine). Promoting one into the
    trunk moved the trunk and then failed writing the file (pygit2 encodes a name strictly; exit 6), leaving
    the trunk's worktree showing it deleted, and every later commit there failed the same way."""
    import os
    import subprocess

    from conftest import run_cli

    assert run_cli("lane", "create", "a", cwd=repo).code == 0
    name = b"caf\xe9.txt"
    with open(os.fsencode(workspace(repo, "a")) + b"/" + name, "wb") as handle:
        handle.write(b"latin\n")
    assert run_cli("commit", "-w", "a", "-m", "a file", "--agent", "c", "--auto-accept", cwd=repo).code == 0
    result = run_cli("promote", "a", "--auto-accept", cwd=repo)
    assert result.code == 0, result.err
    with open(os.fsencode(repo) + b"/" + name, "rb") as handle:
        assert handle.read() == b"latin\n"
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, check=True).stdout
    assert status == b""


def test_a_file_named_in_another_encoding_with_unsaved_edits_is_left_for_attention(repo):
    """The same Latin-1 name with a person's unsaved edit in the trunk worktree: comparing that file with the
    promoted one handed the name to pygit2's filter lookup, which encodes strictly: the promotion failed
    after the trunk moved (exit 6), and `status` failed the same way from then on."""
    import os

    from conftest import run_cli

    assert run_cli("lane", "create", "a", cwd=repo).code == 0
    name = b"caf\xe9.txt"
    with open(os.fsencode(workspace(repo, "a")) + b"/" + name, "wb") as handle:
        handle.write(b"latin\n")
    assert run_cli("commit", "-w", "a", "-m", "a file", "--agent", "c", "--auto-accept", cwd=repo).code == 0
    with open(os.fsencode(repo) + b"/" + name, "wb") as handle:
        handle.write(b"typed by a person\n")
    result = run_cli("promote", "a", "--auto-accept", "--json", cwd=repo)
    assert result.code == 0, result.err
    assert result.json["worktree"]["attention"] == [os.fsdecode(name)]
    with open(os.fsencode(repo) + b"/" + name, "rb") as handle:
        assert handle.read() == b"typed by a person\n"  # left as typed
    status = run_cli("status", "--json", cwd=repo)
    assert status.code == 0 and status.json["lanes"][0]["attention"] == [os.fsdecode(name)], status.err
