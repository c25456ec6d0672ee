"""The operation log and undo, through the CLI in real processes: every lanes operation that moves refs is
recorded; `undo` moves the refs back by compare-and-swap after checking nothing depends on them since,
keeps what it replaces in a backup ref, never overwrites unsaved edits, and can itself be undone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import fsck_clean, git, run_cli, workspace
from promotion_fixtures import edit, head, land

AGENT = {"GIT_LANES_AGENT": "coder"}


def ops(repo) -> list[dict]:
    result = run_cli("op", "log", "-n", "50", "--json", cwd=repo)
    assert result.code == 0, result.err
    return result.json


def op_id(repo, description: str) -> str:
    return next(r["id"] for r in ops(repo) if r["description"] == description)


def undo(repo, *args: str, code: int = 0):
    result = run_cli("undo", *args, "--json", cwd=repo)
    assert result.code == code, result.out + result.err
    return result.json


def test_every_ref_moving_operation_is_in_the_op_log(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"}, prompt="add a")
    api.promote("a", auto_accept=True, agent_id="lead")
    api.lane_reset("a")
    api.lane_delete("a")
    rows = ops(repo)
    assert [r["description"] for r in rows] == [
        "delete lane a", "reset lane a onto the trunk", "promote a into the trunk", "commit on a: add a",
        "create lane a"]
    assert all(r["kind"] == "lanes" and len(r["id"]) == 16 and r["undone_by"] is None for r in rows)
    assert [r["actor"] for r in rows][2:4] == ["lead", "agent-a"]
    shown = run_cli("op", "show", rows[2]["id"][:6], "--json", cwd=repo).json
    assert {m["ref"] for m in shown["moves"]} == {"refs/heads/main"}
    assert shown["notes"] and shown["moves"][0]["introduced"]
    # plain git reads the log too: one commit per operation, its subject the description
    subjects = git("log", "--format=%s", "refs/lanes/oplog", cwd=repo).splitlines()
    assert subjects == [r["description"] for r in rows]


def test_undo_of_a_promote_restores_the_trunk_and_its_files_and_undoing_the_undo_brings_it_back(api, repo):
    land(api, repo, "a", {"a.txt": "from a\n", "README.md": "# promoted readme\n"})
    before = head(repo, "main")
    promoted = run_cli("promote", "a", "--auto-accept", "--json", cwd=repo, env=AGENT)
    assert promoted.code == 0, promoted.err
    after = head(repo, "main")
    assert (repo / "a.txt").read_text() == "from a\n"
    edit(repo, {"a.txt": "my unsaved edit\n", "notes.txt": "untracked\n"})
    undone = undo(repo)
    assert undone["description"] == "promote a into the trunk"
    assert head(repo, "main") == before
    assert (repo / "README.md").read_text() == "# project\n"  # the promoted file went back
    assert (repo / "a.txt").read_text() == "my unsaved edit\n"  # an unsaved edit is never overwritten
    assert (repo / "notes.txt").read_text() == "untracked\n"
    [report] = undone["workspaces"]
    assert report["attention"] == ["a.txt"] and "README.md" in report["updated"]
    kept = undone["backup"]
    assert kept.startswith("refs/lanes/backups/-undo/") and git("rev-parse", f"{kept}^1", cwd=repo).strip() == after
    assert run_cli("show", promoted.json["transition"]["id"][:8], cwd=repo).code == 1  # its record went too
    redone = undo(repo)
    assert redone["undone"] == undone["op"]
    assert head(repo, "main") == after
    assert (repo / "README.md").read_text() == "# promoted readme\n"
    assert (repo / "a.txt").read_text() == "my unsaved edit\n"
    assert run_cli("show", promoted.json["transition"]["id"][:8], "--json", cwd=repo).json["status"] == "accepted"
    assert git("fsck", "--no-progress", cwd=repo, check=False) == ""


def test_undo_is_refused_naming_what_depends_on_the_operation(api, repo):
    land(api, repo, "a", {"a.txt": "1\n"}, prompt="first")
    land(api, repo, "a", {"a.txt": "2\n"}, prompt="second")
    blocked = run_cli("undo", op_id(repo, "commit on a: first"), cwd=repo)
    assert blocked.code == 3
    assert "lane a (refs/lanes/heads/a) moved to" in blocked.err and "commit on a: second" in blocked.err
    api.promote("a", auto_accept=True, agent_id="lead")
    built_on = run_cli("undo", op_id(repo, "commit on a: second"), "--json", cwd=repo)
    assert built_on.code == 3 and built_on.json["error"] == "undo_blocked"
    assert "lane main was built on" in built_on.err
    assert [b["ref"] for b in built_on.json["blockers"]] == ["refs/heads/main"]
    nothing_moved = head(repo, "refs/lanes/heads/a")
    assert git("show", "-s", "--format=%s", nothing_moved, cwd=repo).strip() == "second"


def test_undo_of_a_commit_keeps_the_work_in_the_workspace(api, repo):
    api.lane_create("a")
    start = head(repo, "refs/lanes/heads/a")
    edit(workspace(repo, "a"), {"w.txt": "work\n"})
    committed = run_cli("commit", "-m", "work", "--auto-accept", cwd=workspace(repo, "a"), env=AGENT)
    assert committed.code == 0, committed.err
    undo(repo)
    assert head(repo, "refs/lanes/heads/a") == start
    assert (workspace(repo, "a") / "w.txt").read_text() == "work\n"
    shown = run_cli("lane", "show", "a", "--json", cwd=repo).json
    assert shown["head"] == start and "w.txt" in shown["dirty"]


def test_undo_of_a_forced_lane_delete_brings_back_the_lane_its_workspace_and_its_edits(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    edit(workspace(repo, "a"), {"a.txt": "unsaved\n"})
    deleted = run_cli("lane", "delete", "a", "--force", cwd=repo)
    assert deleted.code == 0 and not workspace(repo, "a").exists()
    undone = undo(repo)
    assert any(w.get("recreated") for w in undone["workspaces"])
    assert (workspace(repo, "a") / "a.txt").read_text() == "unsaved\n"
    assert git("rev-parse", "refs/lanes/heads/a", cwd=repo).strip()
    assert "refs/lanes/deleted/a" not in git("for-each-ref", "--format=%(refname)", cwd=repo)


def test_undo_of_a_reset_moves_the_lane_and_its_files_back(api, repo):
    land(api, repo, "a", {"a.txt": "attempt\n"})
    attempt = head(repo, "refs/lanes/heads/a")
    assert run_cli("lane", "reset", "a", "--json", cwd=repo).code == 0
    assert not (workspace(repo, "a") / "a.txt").exists()
    undone = undo(repo)
    assert head(repo, "refs/lanes/heads/a") == attempt
    assert (workspace(repo, "a") / "a.txt").read_text() == "attempt\n"
    assert undone["moves"] and git("status", "--porcelain", cwd=workspace(repo, "a")) == ""


def test_undo_of_a_restore_puts_the_workspace_back(api, repo):
    first = land(api, repo, "a", {"a.txt": "1\n"})
    land(api, repo, "a", {"a.txt": "2\n"})
    assert run_cli("restore", first["id"][:8], "-w", "a", cwd=repo).code == 0
    assert (workspace(repo, "a") / "a.txt").read_text() == "1\n"
    undo(repo)
    assert (workspace(repo, "a") / "a.txt").read_text() == "2\n"


def test_ledger_ops_are_undone_by_inverse_ops(api, repo):
    assert run_cli("claim", "add", "src/**", "--agent", "coder", cwd=repo).code == 0
    assert run_cli("board", "post", "hello all", "--agent", "coder", cwd=repo).code == 0
    rows = ops(repo)
    assert [r["kind"] for r in rows[:2]] == ["ledger", "ledger"]
    retracted = undo(repo, rows[0]["id"][:8])
    assert retracted["records"] == ["post #1"]
    assert retracted["description"] == rows[0]["description"]  # what was undone, not the undo itself
    assert run_cli("board", "read", "--json", cwd=repo).json["posts"] == []
    released = undo(repo, rows[1]["id"])
    assert released["records"] == ["coder's file claims"]
    assert run_cli("claim", "list", "--json", cwd=repo).json == []
    undo(repo, released["op"])  # undoing the undo claims again
    assert [c["glob"] for c in run_cli("claim", "list", "--json", cwd=repo).json] == ["src/**"]
    log = git("log", "--format=%s", "-3", "refs/lanes/ledger", cwd=repo).splitlines()
    assert log[0].startswith("Test: undo op.undo") and log[1].startswith("Test: undo claim.add")


def test_undo_after_a_budget_set_undoes_that_budget_not_an_older_operation(api, repo):
    """`budget set` then `undo` undid the operation before it (the lane's creation, here), leaving a budget on
    a lane that was gone: budget ops were neither listed nor undoable."""
    assert run_cli("lane", "create", "feature", cwd=repo).code == 0
    assert run_cli("budget", "set", "--lane", "feature", "--usd", "2", cwd=repo).code == 0
    assert ops(repo)[0]["kind"] == "ledger" and ops(repo)[0]["type"] == "budget.set"
    undone = undo(repo)
    assert undone["records"] == ["the budget of lane feature"]
    assert run_cli("budget", "show", "--json", cwd=repo).json == []
    assert "feature" in [lane["name"] for lane in run_cli("lane", "list", "--json", cwd=repo).json]
    undo(repo, undone["op"])  # undoing the undo sets it again
    assert [b["usd"] for b in run_cli("budget", "show", "--json", cwd=repo).json] == [2.0]
    assert run_cli("budget", "clear", "--lane", "feature", cwd=repo).code == 0
    undo(repo)
    assert [b["usd"] for b in run_cli("budget", "show", "--json", cwd=repo).json] == [2.0]


def test_a_ledger_op_changed_since_cannot_be_undone(api, repo):
    created = run_cli("task", "create", "Session store", "--json", cwd=repo).json
    assert run_cli("task", "claim", created["task"][:8], "--agent", "coder", cwd=repo).code == 0
    blocked = run_cli("undo", created["op"], cwd=repo)
    assert blocked.code == 3
    assert f"task {created['task'][:8]} changed since by ledger op" in blocked.err and "task.claim" in blocked.err
    assert run_cli("task", "show", created["task"][:8], cwd=repo).code == 0


def test_dry_run_moves_nothing_and_not_undoable_ops_say_so(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    before = git("for-each-ref", cwd=repo)
    checked = undo(repo, "--dry-run")
    assert checked["dry_run"] and checked["moves"][0]["ref"] == "refs/lanes/heads/a"
    assert git("for-each-ref", cwd=repo) == before
    beat = run_cli("agent", "register", "coder", "--json", cwd=repo).json
    refused = run_cli("undo", beat["op"], cwd=repo)
    assert refused.code == 1 and "cannot be undone" in refused.err
    unknown = run_cli("undo", "ffffffff", cwd=repo)
    assert unknown.code == 1 and "no operation matches" in unknown.err


def test_an_undo_already_undone_is_refused(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"}, prompt="work")
    target = op_id(repo, "commit on a: work")
    undo(repo, target)
    again = run_cli("undo", target, cwd=repo)
    assert again.code == 3 and "already undone" in again.err


def test_undo_of_a_pull_moves_the_lanes_it_brought_back_and_its_undo_brings_them_again(tmp_path):
    from gitserver import clone, make_origin

    from git_lanes.api import Lanes

    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    origin = make_origin(tmp_path, remote.as_uri())
    there = Lanes(origin)
    land(there, origin, "feat", {"f.txt": "one\n"})
    there.sync()
    here = clone(tmp_path, remote.as_uri(), "machine-b")
    assert run_cli("pull", cwd=here).code == 0
    first = head(here, "refs/lanes/heads/feat")
    land(there, origin, "feat", {"f.txt": "two\n"})
    there.sync()
    pulled = run_cli("pull", "--json", cwd=here)
    assert pulled.code == 0, pulled.err
    second = head(here, "refs/lanes/heads/feat")
    assert second != first and ops(here)[0]["description"] == "pull"
    undone = undo(here)
    assert undone["description"] == "pull" and head(here, "refs/lanes/heads/feat") == first
    undo(here)
    assert head(here, "refs/lanes/heads/feat") == second


def test_an_operation_killed_after_moving_refs_is_in_the_log_and_undoable(api, repo, tmp_path):
    """SIGKILL while `commit --auto-accept` runs its gate: the proposal ref and its record already moved, the
    entry was not appended. The next reader of the log appends it from the killed process's journal."""
    spool = tmp_path / "spool"
    spool.mkdir()
    (repo / ".lanes.toml").write_text(
        f'[[gate]]\nname = "slow"\ncommand = ["sh", "-c", "echo $$ > {spool}/gate.pid; exec sleep 60"]\n')
    git("add", ".lanes.toml", cwd=repo)
    git("commit", "-qm", "a slow gate", cwd=repo)
    api.lane_create("a")
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    doomed = subprocess.Popen([sys.executable, "-m", "git_lanes", "commit", "-w", "a", "-m", "work",
                               "--agent", "coder", "--auto-accept"], cwd=repo)
    while not (spool / "gate.pid").exists() or not (spool / "gate.pid").read_text().strip():
        assert doomed.poll() is None, "the commit ended before its gate ran"
        time.sleep(0.05)
    doomed.kill()
    doomed.wait()
    os.kill(int((spool / "gate.pid").read_text()), signal.SIGTERM)
    proposal = git("for-each-ref", "--format=%(refname)", "refs/lanes/proposals/", cwd=repo).strip()
    assert proposal  # the kill came after the proposal moved
    newest = ops(repo)[0]
    assert newest["description"] == "commit on a: work"
    undone = undo(repo)
    assert undone["undone"] == newest["id"] and proposal in {m["ref"] for m in undone["moves"]}
    assert git("for-each-ref", "refs/lanes/proposals/", cwd=repo) == ""
    assert not list((repo / ".git" / "lanes-oplog").glob("*"))  # the journal went with its entry


def test_an_undo_whose_backup_gc_removed_can_still_be_undone(api, repo):
    """gc removes what an undo kept under refs/lanes/backups/-undo/; undoing that undo (a redo) wants the backup
    gone, and it is, so nothing depends on it: the redo used to be blocked for good, naming gc, whose own
    undo cannot bring pruned objects back."""
    api.lane_create("a")
    edit(workspace(repo, "a"), {"w.txt": "work\n"})
    assert run_cli("commit", "-m", "work", "--auto-accept", cwd=workspace(repo, "a"), env=AGENT).code == 0
    committed = head(repo, "refs/lanes/heads/a")
    undone = undo(repo)
    assert undone["backup"] and git("for-each-ref", undone["backup"], cwd=repo)
    assert run_cli("gc", "--older-than", "0", cwd=repo).code == 0
    assert not git("for-each-ref", undone["backup"], cwd=repo)
    redone = undo(repo, undone["op"][:8])
    assert head(repo, "refs/lanes/heads/a") == committed
    assert redone["gone"] == [undone["backup"]]
    assert undone["backup"] not in [m["ref"] for m in redone["moves"]]
    fsck_clean(repo)


def test_an_undone_forced_delete_whose_kept_edits_gc_removed_brings_the_lane_back_and_says_so(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    committed = head(repo, "refs/lanes/heads/a")
    edit(workspace(repo, "a"), {"a.txt": "unsaved\n"})
    assert run_cli("lane", "delete", "a", "--force", cwd=repo).code == 0
    delete = ops(repo)[0]["id"]
    assert run_cli("gc", "--older-than", "0", cwd=repo).code == 0
    gc_undo = run_cli("undo", "--json", cwd=repo)
    assert gc_undo.code == 3 and "pruned" in gc_undo.json["message"]
    assert "later operations first" not in gc_undo.json["hint"], gc_undo.json["hint"]
    result = run_cli("undo", delete[:8], cwd=repo)
    assert result.code == 0, result.err
    assert head(repo, "refs/lanes/heads/a") == committed
    assert (workspace(repo, "a") / "a.txt").read_text() == "a\n"
    assert "a: the unsaved edits kept at refs/lanes/backups/a/" in result.out and "removed by gc" in result.out
    fsck_clean(repo)


def test_an_undo_blocked_only_by_unsaved_edits_says_to_save_them_not_to_undo_later_operations(api, repo):
    land(api, repo, "a", {"a.txt": "a\n"})
    edit(workspace(repo, "a"), {"a.txt": "unsaved\n"})
    assert run_cli("lane", "delete", "a", "--force", cwd=repo).code == 0
    undone = undo(repo)  # the lane, its workspace and its unsaved edits come back
    redo = run_cli("undo", undone["op"][:8], "--json", cwd=repo)
    assert redo.code == 3 and redo.json["blockers"] == [
        {"workspace": "a", "unsaved": True, "reason": "it has unsnapshotted edits, and undoing would remove it"}]
    assert "later operations" not in redo.json["hint"] and "git lanes commit" in redo.json["hint"]
    assert (workspace(repo, "a") / "a.txt").read_text() == "unsaved\n"


def test_an_undo_of_a_forced_delete_stopped_before_its_workspace_came_back_keeps_the_edits_in_sight(
        api, repo, monkeypatch):
    """An undo killed after its refs moved, before it made the workspace again and put the kept edits back,
    had already deleted the edits' backup ref: the lane came back empty-handed, the edits reachable only
    through refs/lanes/backups/undo/, which nothing names. The backup ref now goes only once its edits are
    back in the workspace."""
    from kill_helpers import Killed

    from git_lanes.domain import undo as undo_domain

    land(api, repo, "a", {"a.txt": "a\n"})
    edit(workspace(repo, "a"), {"a.txt": "unsaved\n"})
    assert run_cli("lane", "delete", "a", "--force", cwd=repo).code == 0
    kept = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/lanes/backups/a/", cwd=repo).split()
    assert len(kept) == 2

    def killed(*args, **kwargs):
        raise Killed()

    monkeypatch.setattr(undo_domain, "_follow", killed)
    try:
        api.undo()
    except Killed:
        pass
    else:
        raise AssertionError("the undo was not stopped")
    assert git("rev-parse", "refs/lanes/heads/a", cwd=repo).strip()  # its refs moved before the stop
    assert git("for-each-ref", "--format=%(refname) %(objectname)", "refs/lanes/backups/a/", cwd=repo).split() == kept
    fsck_clean(repo)


SMUDGE = """
import pathlib, sys, time
spool = pathlib.Path(sys.argv[1])
if (spool / "block").exists():
    (spool / "smudging").write_text("")
    for _ in range(12000):  # at most two minutes: the test releases it long before
        if (spool / "release").exists():
            break
        time.sleep(0.01)
sys.stdout.buffer.write(sys.stdin.buffer.read())
"""


def kill_undo_while_smudging(repo, spool) -> None:
    """Run `git lanes undo` and SIGKILL it while git's smudge filter (SMUDGE) holds a checkout of its
    workspaces, then let the filter go: an undo killed after its refs moved, before its files followed."""
    from kill_helpers import children_ended

    (spool / "block").write_text("")
    doomed = subprocess.Popen([sys.executable, "-m", "git_lanes", "undo"], cwd=repo, start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at(doomed, spool / "smudging")
    (spool / "release").write_text("")
    children_ended(doomed.pid)
    (spool / "block").unlink()


def test_an_undo_killed_after_its_refs_moved_is_finished_by_the_next_undo(api, repo, tmp_path):
    """SIGKILL while an undo of a promotion brings the main worktree back (a smudge filter that git runs for
    the file being written, after the trunk's ref moved back): the trunk was back, its files half promoted.
    The next `undo` appended the killed undo to the log and undid *it*, promoting again. It now finishes the
    interrupted undo: the files follow the trunk, and unsaved work stays as it was."""
    spool = tmp_path / "spool"
    spool.mkdir()
    (tmp_path / "smudge.py").write_text(SMUDGE)
    git("config", "filter.slow.smudge", f"{sys.executable} {tmp_path / 'smudge.py'} {spool}", cwd=repo)
    (repo / ".git" / "info" / "attributes").write_text("*.md filter=slow\n")
    land(api, repo, "a", {"a.txt": "from a\n", "README.md": "# promoted readme\n"})
    before = head(repo, "main")
    promoted = run_cli("promote", "a", "--auto-accept", "--json", cwd=repo, env=AGENT)
    assert promoted.code == 0, promoted.err
    after = head(repo, "main")
    edit(repo, {"notes.txt": "untracked\n", "src/keep.py": "mine\n"})

    kill_undo_while_smudging(repo, spool)
    assert head(repo, "main") == before  # the kill came after the refs moved back
    assert (repo / "README.md").read_text() == "# promoted readme\n"  # and before the files followed

    finished = run_cli("undo", "--json", cwd=repo)
    assert finished.code == 0, finished.out + finished.err
    assert head(repo, "main") == before  # not promoted again
    assert (repo / "README.md").read_text() == "# project\n"
    assert finished.json["finished"][0]["undone"] == ops(repo)[1]["id"]
    assert not (repo / "a.txt").exists()
    assert (repo / "notes.txt").read_text() == "untracked\n" and (repo / "src/keep.py").read_text() == "mine\n"
    assert [r["description"] for r in ops(repo)[:2]] == ["undo " + ops(repo)[1]["id"][:8]
                                                         + ": promote a into the trunk", "promote a into the trunk"]
    again = run_cli("undo", "--json", cwd=repo)  # nothing left unfinished: an undo is an undo again (a redo)
    assert again.code == 0, again.err
    assert head(repo, "main") == after and (repo / "README.md").read_text() == "# promoted readme\n"
    fsck_clean(repo)


def test_an_undo_of_a_forced_delete_killed_while_its_workspace_came_back_is_finished_with_the_edits(
        api, repo, tmp_path):
    """The same kill while the undo of a `lane delete --force` checks out the lane's workspace again (git runs
    the smudge filter): the next undo makes the workspace whole and puts the kept unsaved edits back, where
    before it deleted the lane again."""
    spool = tmp_path / "spool"
    spool.mkdir()
    (tmp_path / "smudge.py").write_text(SMUDGE)
    land(api, repo, "a", {"a.md": "a\n", "b.md": "b\n"})
    committed = head(repo, "refs/lanes/heads/a")
    edit(workspace(repo, "a"), {"a.md": "unsaved\n"})
    assert run_cli("lane", "delete", "a", "--force", cwd=repo).code == 0
    git("config", "filter.slow.smudge", f"{sys.executable} {tmp_path / 'smudge.py'} {spool}", cwd=repo)
    (repo / ".git" / "info" / "attributes").write_text("*.md filter=slow\n")

    kill_undo_while_smudging(repo, spool)
    assert head(repo, "refs/lanes/heads/a") == committed  # the kill came after the lane's ref came back

    finished = run_cli("undo", "--json", cwd=repo)
    assert finished.code == 0, finished.out + finished.err
    assert head(repo, "refs/lanes/heads/a") == committed  # not deleted again
    assert (workspace(repo, "a") / "a.md").read_text() == "unsaved\n"
    assert (workspace(repo, "a") / "b.md").read_text() == "b\n"
    [done] = finished.json["finished"]
    assert done["description"] == "delete lane a --force"
    assert any(w.get("restored_edits") for w in done["workspaces"])
    fsck_clean(repo)


def test_lane_commands_accept_reject_and_restore_record_the_agent_acting(repo):
    """`lane create`, `lane delete`, `accept`, `reject` and `restore` recorded the git user in the operation
    log however GIT_LANES_AGENT or --agent named the agent acting (issue 8: `--agent`/GIT_LANES_AGENT on every
    command that acts as an agent). They take it now; an empty one is refused with nothing moved."""
    def cli(*args: str, env: dict | None = None) -> dict:
        result = run_cli(*args, "--json", cwd=repo, env=env)
        assert result.code == 0, result.err
        return result.json

    cli("lane", "create", "a", env=AGENT)
    (workspace(repo, "a") / "a.txt").write_text("a\n")
    first = cli("propose", "-w", "a", "-m", "first", env=AGENT)["id"]
    cli("reject", first, "--agent", "reviewer")
    (workspace(repo, "a") / "a.txt").write_text("again\n")
    second = cli("propose", "-w", "a", "-m", "second", env=AGENT)["id"]
    cli("accept", second[:8], env={"GIT_LANES_AGENT": "reviewer-2"})
    cli("restore", "main", "-w", "a", "--agent", "coder-2")
    before = git("for-each-ref", cwd=repo)
    refused = run_cli("lane", "delete", "a", "--force", "--agent", "", "--json", cwd=repo)
    assert refused.code == 1 and refused.json["error"] == "invalid_agent", refused.err
    assert git("for-each-ref", cwd=repo) == before
    cli("lane", "delete", "a", "--force", env=AGENT)
    actors = {r["description"].split(":")[0]: r["actor"] for r in ops(repo)}
    assert actors["create lane a"] == "coder" and actors["delete lane a --force"] == "coder", actors
    assert actors[f"reject {first[:8]}"] == "reviewer" and actors[f"accept {second[:8]}"] == "reviewer-2", actors
    assert actors["restore a to main"] == "coder-2", actors


def test_an_undo_given_no_operation_stops_at_a_handoff_it_cannot_reverse(repo):
    """A task handoff is no operation undo can reverse, and `undo` right after one undid the operation before
    it (here a post) without a word. It refuses now, naming the handoff; the operation before it is
    still undone when named."""
    def cli(*args: str, code: int = 0) -> dict:
        result = run_cli(*args, "--json", cwd=repo)
        assert result.code == code, result.out + result.err
        return result.json

    task = cli("task", "create", "Login flow")["task"]
    cli("task", "claim", task, "--agent", "coder-1")
    cli("board", "post", "handing the login flow on", "--agent", "coder-1")
    post = ops(repo)[0]  # the operation an undo reached past the handoff for, and undid unasked
    assert "post" in post["description"], post
    cli("task", "handoff", task, "--to", "coder-2", "--agent", "coder-1")
    refused = cli("undo", code=1)
    assert refused["error"] == "not_undoable" and "task.handoff" in refused["message"], refused
    task_now = cli("task", "show", task)
    assert (task_now["owner"], task_now["status"]) == ("coder-2", "claimed")  # nothing moved
    assert cli("undo", post["id"][:8])["undone"] == post["id"]  # an older one, named, is undone


def test_undo_keeps_its_backups_apart_from_those_of_a_lane_named_undo(api, repo):
    """Undo kept what it replaced under refs/lanes/backups/undo/, where a lane named `undo` keeps its own
    backups: redoing a commit on that lane took the undo's backup (an empty tree) for the lane's kept unsaved
    edits and checked it out over the workspace, deleting its files. Undo's backups now go where no lane's
    can (refs/lanes/backups/-undo/), and one an older version kept under undo/ is still told apart."""
    api.lane_create("undo")
    edit(workspace(repo, "undo"), {"w.txt": "work\n"})
    assert run_cli("commit", "-m", "work", "--auto-accept", cwd=workspace(repo, "undo"), env=AGENT).code == 0
    committed = head(repo, "refs/lanes/heads/undo")
    undone = undo(repo)
    assert undone["backup"].startswith("refs/lanes/backups/-undo/"), undone["backup"]
    redone = undo(repo)
    assert head(repo, "refs/lanes/heads/undo") == committed
    assert (workspace(repo, "undo") / "w.txt").read_text() == "work\n"
    assert (workspace(repo, "undo") / "README.md").exists()
    assert not any(w.get("restored_edits") for w in redone["workspaces"]), redone
    fsck_clean(repo)


def test_an_undo_kept_under_the_old_backups_name_is_still_told_apart_from_a_lane_named_undo(api, repo,
                                                                                              monkeypatch):
    """An undo made by an older version kept its backup under refs/lanes/backups/undo/: redoing it still
    takes that backup for the undo's own, not for unsaved edits of the lane named `undo`, and removes it."""
    from git_lanes.model import refs

    api.lane_create("undo")
    edit(workspace(repo, "undo"), {"w.txt": "work\n"})
    assert run_cli("commit", "-m", "work", "--auto-accept", cwd=workspace(repo, "undo"), env=AGENT).code == 0
    committed = head(repo, "refs/lanes/heads/undo")
    with monkeypatch.context() as old:
        old.setattr(refs, "UNDO_BACKUPS", refs.BACKUPS + "undo/")
        undone = api.undo()
    assert undone["backup"].startswith("refs/lanes/backups/undo/")
    redone = undo(repo)
    assert redone["undone"] == undone["op"] and head(repo, "refs/lanes/heads/undo") == committed
    assert (workspace(repo, "undo") / "w.txt").read_text() == "work\n"
    assert not git("for-each-ref", undone["backup"], cwd=repo)  # the redo took it away, as any undo's backup
    fsck_clean(repo)


# `git lanes undo`, stopped where it removes a workspace: just before (`before`) or just after (`after`) the
# removal, it tells the test (a file in the spool) and waits to be killed.
HELD_AT_REMOVAL = """
import pathlib, sys, time
from git_lanes.store import worktree_remove
spool, when = pathlib.Path(sys.argv[1]), sys.argv[2]
removing = worktree_remove.remove

def held(*args, **kwargs):
    if when == "after":
        removing(*args, **kwargs)
    (spool / "held").write_text("")
    time.sleep(120)  # killed long before

worktree_remove.remove = held
sys.argv = ["git-lanes", "undo"]
from git_lanes.__main__ import main
main()
"""


def kill_undo_at_removal(repo, tmp_path, when: str) -> None:
    """Run `git lanes undo` (HELD_AT_REMOVAL) and SIGKILL it where it removes a workspace."""
    from kill_helpers import children_ended

    spool = tmp_path / "spool"
    spool.mkdir()
    doomed = subprocess.Popen([sys.executable, "-c", HELD_AT_REMOVAL, str(spool), when], cwd=repo,
                              start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at(doomed, spool / "held")
    children_ended(doomed.pid)


@pytest.mark.parametrize("when", ["before", "after"])
def test_an_undo_of_a_lane_create_killed_at_its_workspace_never_leaves_the_lane_without_one(repo, tmp_path, when):
    """The undo of `lane create` removed the lane's workspace first and moved its ref after: killed in
    between, the lane stayed with no workspace, and `status` said nothing of the undo cut short. The ref moves
    first now; the workspace a kill leaves behind (clean, its lane gone) goes with the next `undo`, which
    finishes the interrupted one rather than undoing anything else, and `status` says so until then."""
    assert run_cli("lane", "create", "a", cwd=repo).code == 0
    assert workspace(repo, "a").is_dir()
    kill_undo_at_removal(repo, tmp_path, when)
    lane = git("for-each-ref", "refs/lanes/heads/a", cwd=repo)
    assert not lane or workspace(repo, "a").is_dir(), "the lane was left without its workspace"
    assert not lane  # the ref moved before the workspace went

    status = run_cli("status", "--json", cwd=repo)
    assert status.code == 0, status.err
    [interrupted] = status.json["interrupted_undos"]
    assert "git lanes undo" in interrupted["hint"], interrupted
    human = run_cli("status", cwd=repo).out.splitlines()
    assert [line for line in human if "interrupted" in line and "`git lanes undo`" in line], human
    doctor = run_cli("doctor", "--check", "oplog", "--json", cwd=repo)
    [warned] = [c for c in doctor.json["checks"] if c["status"] == "warn"]
    assert "interrupted" in warned["message"] and "`git lanes undo`" in warned["message"], warned
    human = run_cli("doctor", "--check", "oplog", cwd=repo).out.splitlines()
    assert [line for line in human if "interrupted" in line], human

    finished = undo(repo)
    assert finished["undone"] is None and finished["finished"], finished
    assert not workspace(repo, "a").exists()
    assert not git("for-each-ref", "refs/lanes/heads/a", cwd=repo)
    assert "interrupted_undos" not in run_cli("status", "--json", cwd=repo).json
    assert run_cli("doctor", "--check", "workspaces", cwd=repo).code == 0
    fsck_clean(repo)


def test_a_dry_run_of_undo_says_it_would_finish_an_undo_killed_after_its_refs_moved(api, repo, tmp_path):
    """The undo of `lane create` killed after the lane's ref went, before its workspace did: `undo` finishes
    it and does nothing else, but `undo --dry-run` said it would undo the newest operation, the killed undo
    itself (bringing the lane back). A dry run now says what the undo would do, and does none of it; given
    OP, that it would finish the interrupted undo and then undo OP."""
    assert run_cli("lane", "create", "b", cwd=repo).code == 0
    other = ops(repo)[0]["id"]
    assert run_cli("lane", "create", "a", cwd=repo).code == 0
    created = ops(repo)[0]["id"]
    kill_undo_at_removal(repo, tmp_path, "before")
    assert not git("for-each-ref", "refs/lanes/heads/a", cwd=repo)  # the kill came after the ref moved
    assert workspace(repo, "a").is_dir()  # and before the workspace went

    dry = undo(repo, "--dry-run")
    assert dry["undone"] is None and dry["dry_run"], dry
    [would] = dry["finished"]
    assert would["undone"] == created and would["description"] == "create lane a", would
    text = run_cli("undo", "--dry-run", cwd=repo)
    assert text.code == 0, text.err
    assert text.out.splitlines() == [f"would finish the interrupted undo of {created[:8]}: create lane a"], text.out
    assert api.undo(dry_run=True)["finished"] == [would]
    named = undo(repo, other[:8], "--dry-run")
    assert named["undone"] == other and named["finished"] == [would], named
    text = run_cli("undo", other[:8], "--dry-run", cwd=repo)
    assert text.out.splitlines()[:2] == [f"would finish the interrupted undo of {created[:8]}: create lane a",
                                         f"would undo {other[:8]}: create lane b"], text.out + text.err
    assert workspace(repo, "a").is_dir()  # nothing finished
    assert run_cli("status", "--json", cwd=repo).json["interrupted_undos"]

    finished = undo(repo)
    assert finished["undone"] is None and [f["undone"] for f in finished["finished"]] == [created], finished
    assert not workspace(repo, "a").exists()
    assert not git("for-each-ref", "refs/lanes/heads/a", cwd=repo)
    fsck_clean(repo)


# `git lanes undo OP`, stopped just before its refs move (its mark made): it tells the test (a file in the
# spool) and waits to be killed.
HELD_BEFORE_MOVING = """
import os, pathlib, sys, time
from git_lanes.store import ref_moves
spool, marks = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
moving = ref_moves.RefMoves._update_refs

def held(self, updates):
    if marks.is_dir() and os.listdir(marks):  # the undo's own moves, not a recovery before it
        (spool / "held").write_text("")
        time.sleep(120)  # killed long before
    return moving(self, updates)

ref_moves.RefMoves._update_refs = held
sys.argv = ["git-lanes", "undo", sys.argv[3]]
from git_lanes.__main__ import main
main()
"""


def kill_undo_before_its_refs_move(repo, tmp_path, operation: str) -> None:
    """Run `git lanes undo OPERATION` and SIGKILL it once its mark is made, before it moves a ref."""
    from kill_helpers import children_ended

    spool = tmp_path / "spool"
    spool.mkdir(exist_ok=True)
    (spool / "held").unlink(missing_ok=True)
    doomed = subprocess.Popen([sys.executable, "-c", HELD_BEFORE_MOVING, str(spool),
                               str(repo / ".git" / "lanes-undo"), operation[:8]], cwd=repo, start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at(doomed, spool / "held")
    children_ended(doomed.pid)


def test_an_undo_of_a_named_operation_killed_before_its_refs_moved_is_finished_by_the_next_undo(
        api, repo, tmp_path):
    """`undo OP` killed after it made its mark, before any ref moved, left a mark status named as an undo to
    finish with `git lanes undo`: that undo dropped the mark and undid the newest operation instead, which
    nobody asked for. It now undoes OP, the operation that was named, and only that."""
    land(api, repo, "a", {"a.txt": "a\n"}, prompt="first")
    first = head(repo, "refs/lanes/heads/a")
    named = op_id(repo, "commit on a: first")
    land(api, repo, "b", {"b.txt": "b\n"}, prompt="later")
    newest = ops(repo)[0]
    assert newest["description"] == "commit on b: later"
    later = head(repo, "refs/lanes/heads/b")
    kill_undo_before_its_refs_move(repo, tmp_path, named)
    assert head(repo, "refs/lanes/heads/a") == first  # the kill came before any ref moved
    assert ops(repo)[0]["id"] == newest["id"]

    [interrupted] = run_cli("status", "--json", cwd=repo).json["interrupted_undos"]
    assert interrupted["undoes"] == named and "git lanes undo" in interrupted["hint"], interrupted
    assert named[:8] in interrupted["message"] + interrupted["hint"], interrupted
    doctor = run_cli("doctor", "--check", "oplog", "--fix", "--json", cwd=repo)
    [warned] = [c for c in doctor.json["checks"] if c["status"] != "ok"]
    assert warned["status"] == "warn" and named[:8] in warned["message"], warned  # --fix undoes nothing itself
    assert head(repo, "refs/lanes/heads/a") == first
    dry = run_cli("undo", "--dry-run", cwd=repo)
    assert dry.code == 0 and f"would undo {named[:8]}: commit on a: first" in dry.out, dry.out + dry.err

    finished = undo(repo)
    assert finished["undone"] == named and finished["interrupted"], finished
    assert head(repo, "refs/lanes/heads/b") == later  # the newest operation stands
    assert head(repo, "refs/lanes/heads/a") != first
    assert (workspace(repo, "b") / "b.txt").read_text() == "b\n"
    assert "interrupted_undos" not in run_cli("status", "--json", cwd=repo).json
    again = undo(repo)  # nothing left unfinished: the next undo redoes, as after any undo
    assert again["undone"] == finished["op"] and head(repo, "refs/lanes/heads/a") == first
    fsck_clean(repo)


def test_undo_and_dispatch_record_the_agent_acting_as_every_other_writer_does(api, repo):
    """Every other command that writes records `--agent` (or $GIT_LANES_AGENT) in the operation log; `undo`
    and `dispatch` took neither and recorded the git user, so an agent's undo read as a person's."""
    land(api, repo, "a", {"a.txt": "a\n"})
    assert run_cli("undo", "--json", cwd=repo, env=AGENT).code == 0
    assert ops(repo)[0]["actor"] == "coder"
    assert run_cli("undo", "--agent", "lead", "--json", cwd=repo, env=AGENT).code == 0
    assert ops(repo)[0]["actor"] == "lead"
    plan = repo.parent / "plan.toml"
    plan.write_text('ticket = "Login"\n[foundation]\ntitle = "Session"\nowns = ["src/**"]\n')
    dispatched = run_cli("dispatch", str(plan), "--json", cwd=repo, env=AGENT)
    assert dispatched.code == 0, dispatched.err
    assert [r["actor"] for r in ops(repo) if r["description"].startswith("dispatch")] == ["coder"]


def test_an_interrupted_undo_that_later_work_now_blocks_is_refused_once_and_then_forgotten(api, repo, tmp_path):
    """The undo of OP cut short before it moved anything, with work built on OP since: the next `undo` refuses
    it, naming OP, as `undo OP` would now; the undo asked for cannot happen, so its mark goes, and the undo
    after that is an undo of the newest operation again rather than the same refusal for ever."""
    land(api, repo, "a", {"a.txt": "a\n"}, prompt="first")
    named = op_id(repo, "commit on a: first")
    kill_undo_before_its_refs_move(repo, tmp_path, named)
    land(api, repo, "a", {"a.txt": "again\n"}, prompt="on top")
    on_top = head(repo, "refs/lanes/heads/a")
    assert run_cli("status", "--json", cwd=repo).json["interrupted_undos"][0]["undoes"] == named

    refused = run_cli("undo", "--json", cwd=repo)
    assert refused.code == 3 and named[:8] in refused.json["message"], refused.out + refused.err
    assert head(repo, "refs/lanes/heads/a") == on_top
    assert "interrupted_undos" not in run_cli("status", "--json", cwd=repo).json
    newest = undo(repo)
    assert newest["description"] == "commit on a: on top" and head(repo, "refs/lanes/heads/a") != on_top
    fsck_clean(repo)


def killed_at(doomed: subprocess.Popen, marker: Path) -> None:
    """Kill `doomed` once it has made `marker` (where the code under test is held), and reap it."""
    while not marker.exists():
        assert doomed.poll() is None, doomed.communicate()
        time.sleep(0.01)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
