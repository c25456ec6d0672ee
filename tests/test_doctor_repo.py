"""`git lanes doctor [--fix]` on the repository's own state: refs, notes, the ledger, the operation log and
workspaces (missing, moved, orphaned, locked). --fix repairs what is safe and leaves the rest, named, for a person."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from conftest import git, run_cli, workspace

from git_lanes.api import Lanes

CHECKS = ("refs", "notes", "ledger", "oplog", "workspaces")


def findings(result: dict, check: str) -> list[dict]:
    return [c for c in result["checks"] if c["check"] == check]


def doctor(repo: Path, *args: str):
    return run_cli("doctor", *[a for name in CHECKS for a in ("--check", name)], *args, "--json", cwd=repo)


def test_a_healthy_repository_is_all_ok(repo: Path):
    api = Lanes(repo)
    api.lane_create("feature/a")
    api.task_create("something")
    result = doctor(repo)
    assert result.code == 0, result.err
    assert {c["check"] for c in result.json["checks"]} == set(CHECKS)
    assert all(c["status"] == "ok" for c in result.json["checks"]), result.json
    mistyped = run_cli("doctor", "--check", "workspace", cwd=repo)  # runs nothing: not a pass
    assert mistyped.code == 1 and "no check named 'workspace'" in mistyped.err and "workspaces" in mistyped.err


def test_fix_repairs_what_is_safe_and_leaves_the_rest_for_a_person(tmp_path: Path, repo: Path):
    api = Lanes(repo)
    for lane in ("deleted-by-hand", "moved", "orphan", "dirty-orphan", "locked"):
        api.lane_create(lane)
    # missing: a workspace folder deleted by hand
    shutil.rmtree(workspace(repo, "deleted-by-hand"))
    # moved: a workspace moved away by hand and back under another name
    elsewhere = tmp_path / "elsewhere"
    workspace(repo, "moved").rename(elsewhere)
    git("worktree", "repair", str(elsewhere), cwd=repo)  # git now knows it at `elsewhere`
    elsewhere.rename(workspace(repo, "moved"))             # ...and it came back without telling git
    # orphaned: lanes deleted under their workspaces, one with unsaved edits
    git("update-ref", "-d", "refs/lanes/heads/orphan", cwd=repo)
    (workspace(repo, "dirty-orphan") / "wip.txt").write_text("wip\n")
    git("update-ref", "-d", "refs/lanes/heads/dirty-orphan", cwd=repo)
    # locked, by a person
    git("worktree", "lock", "--reason", "on a USB disk", str(workspace(repo, "locked")), cwd=repo)
    # an abandoned lock file on a lanes ref, and a ref git-lanes would never write
    lock = repo / ".git" / "refs" / "lanes" / "heads" / "locked.lock"
    lock.write_text("0" * 40 + "\n")
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input="not a commit\n").strip()
    git("update-ref", "refs/lanes/heads/blob", blob, cwd=repo)

    before = doctor(repo)
    assert before.code == 1  # the blob is a failure
    messages = " | ".join(c["message"] for c in before.json["checks"])
    for words in ("deleted-by-hand", "moved here by hand", "'orphan' has no lane", "unsaved edits", "is locked",
                  "lock files", "refs/lanes/heads/blob"):
        assert words in messages, words
    assert all("fixable" in c for c in findings(before.json, "workspaces") if "moved" in c["message"])

    fixed = doctor(repo, "--fix")
    assert fixed.json["fix"] is True and fixed.json["fixed"] >= 4
    statuses = {c["message"]: c["status"] for c in fixed.json["checks"]}
    assert [s for m, s in statuses.items() if "moved here" in m] == ["fixed"]
    assert [s for m, s in statuses.items() if "'orphan' has no lane" in m] == ["fixed"]
    assert [s for m, s in statuses.items() if "unsaved edits" in m] == ["warn"]  # left for a person
    assert [s for m, s in statuses.items() if "is locked" in m] == ["warn"]
    assert [s for m, s in statuses.items() if "blob" in m] == ["fail"]
    assert not lock.exists()
    assert not workspace(repo, "orphan").exists()  # its head is the trunk's: nothing to keep
    assert (workspace(repo, "dirty-orphan") / "wip.txt").exists()
    assert git("-C", str(workspace(repo, "moved")), "status", "--porcelain", cwd=repo) == ""
    text = run_cli("doctor", "--check", "workspaces", "--fix", cwd=repo)
    assert "left for a person" in text.out

    after = doctor(repo)
    remaining = [c["message"] for c in after.json["checks"] if c["status"] != "ok"]
    assert len(remaining) == 3, remaining  # the blob ref, the dirty orphan, the locked workspace


def test_a_workspace_moved_away_with_git_worktree_move_is_found_and_put_back(tmp_path: Path, repo: Path):
    """`git worktree move` of a lane's workspace out of .lanes/workspaces left the lane with no workspace
    (`lane list` shows "-", `lane path` refuses) while doctor said every workspace was "where git expects
    it", and the moved folder, unsaved edits and all, was named nowhere. doctor now names it, and --fix
    moves it back (with git, so nothing in it is lost)."""
    api = Lanes(repo)
    api.lane_create("feature/a")
    home = workspace(repo, "feature/a")
    (home / "wip.txt").write_text("unsaved\n")
    away = tmp_path / "somewhere" / "a"
    away.parent.mkdir()
    git("worktree", "move", str(home), str(away), cwd=repo)
    # a person's own detached worktree elsewhere, at the trunk's head, is none of doctor's business
    git("worktree", "add", "-q", "--detach", str(tmp_path / "mine"), "main", cwd=repo)

    found = [c for c in findings(doctor(repo).json, "workspaces") if c["status"] != "ok"]
    assert len(found) == 1, found
    assert found[0]["status"] == "warn" and str(away) in found[0]["message"] and "feature/a" in found[0]["message"]
    assert str(home) in found[0]["message"] and found[0].get("fixable") is True, found

    fixed = findings(doctor(repo, "--fix").json, "workspaces")
    assert [c["status"] for c in fixed if "feature/a" in c["message"]] == ["fixed"], fixed
    assert not away.exists() and (home / "wip.txt").read_text() == "unsaved\n"
    assert run_cli("lane", "path", "feature/a", cwd=repo).out.strip() == str(home)
    assert all(c["status"] == "ok" for c in findings(doctor(repo).json, "workspaces"))


def test_notes_of_states_that_are_gone_are_dropped_by_fix(repo: Path):
    api = Lanes(repo)
    fake = "ab" * 20
    api.lane_create("a")
    (workspace(repo, "a") / "a.txt").write_text("a\n")
    state = api.commit("a", "coder-1", lane="a", auto_accept=True)["to"]
    text = git("notes", "--ref=lanes", "show", state, cwd=repo)
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input=text).strip()
    # a note for an object this repository does not have, as a pruned clone's sync could leave
    tree = git("ls-tree", "refs/notes/lanes", cwd=repo) + f"100644 blob {blob}\t{fake}\n"
    new_tree = git("mktree", cwd=repo, input=tree).strip()
    commit = git("commit-tree", new_tree, "-p", "refs/notes/lanes", "-m", "odd", cwd=repo).strip()
    git("update-ref", "refs/notes/lanes", commit, cwd=repo)
    result = doctor(repo, "--fix")
    notes = findings(result.json, "notes")
    assert any(c["status"] == "fixed" and "no longer exist" in c["message"] for c in notes), notes
    assert fake not in git("notes", "--ref=lanes", "list", cwd=repo)
    assert api.status() is not None


def _peer_commit_adding(repo: Path, path: str, content: str) -> None:
    """A ledger commit a peer made by hand on top of ours: a checkpoint whose tree also holds `path`."""
    head = git("rev-parse", "refs/lanes/ledger", cwd=repo).strip()
    env = {"GIT_INDEX_FILE": str(repo / ".git" / "peer-index")}
    git("read-tree", head, cwd=repo, env=env)
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input=content).strip()
    git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", cwd=repo, env=env)
    tree = git("write-tree", cwd=repo, env=env).strip()
    (repo / ".git" / "peer-index").unlink()
    message = git("log", "-1", "--format=%B", head, cwd=repo).split("\n\n")
    op = f"{message[0]}\n\n{message[1].splitlines()[0]}\n"  # the last op again, without a delta's edits
    commit = git("commit-tree", tree, "-p", head, "-m", op, cwd=repo).strip()
    git("update-ref", "refs/lanes/ledger", commit, head, cwd=repo)


def test_an_unreadable_ledger_record_is_named_once_and_cut_short(repo: Path):
    """A peer names the record: its path was printed whole, twice (the path, then the error naming it)."""
    Lanes(repo).task_create("something")
    path = f"tasks/zz/{'x' * 300}.json"
    _peer_commit_adding(repo, path, "not json")
    result = run_cli("doctor", "--check", "ledger", "--json", cwd=repo)
    [found] = findings(result.json, "ledger")
    assert result.code == 1 and found["status"] == "fail"
    assert found["message"].count("x" * 40) == 1 and len(found["message"]) < 250, found["message"]
    assert found["message"].startswith("ledger records that cannot be read: 'tasks/zz/xxx")
    assert "(314 characters) (is not JSON: " in found["message"]


def test_a_ledger_state_that_cannot_be_read_gets_the_errors_own_hint(repo: Path, tmp_path: Path):
    """A ledger fetched shallow: its error says to fetch it whole, and doctor once said "a peer's commit
    holds it" instead."""
    api = Lanes(repo)
    api.task_create("kept", actor="lead")
    api.board_post("a delta at the head", "coder-1")
    shallow = tmp_path / "shallow"
    git("clone", "-q", "--depth", "1", f"file://{repo}", str(shallow), cwd=tmp_path)
    git("fetch", "-q", "--depth", "1", "origin", "refs/lanes/ledger:refs/lanes/ledger", cwd=shallow)
    assert run_cli("init", cwd=shallow).code == 0
    result = run_cli("doctor", "--check", "ledger", "--json", cwd=shallow)
    [found] = findings(result.json, "ledger")
    assert found["message"].startswith("the ledger's state cannot be read: ") and "shallow fetch" in found["message"]
    assert "git fetch --unshallow" in found["hint"] and "doctor" not in found["hint"], found  # not itself


def test_old_lock_files_on_the_trunk_and_other_refs_are_reported(repo: Path):
    """A killed sync or promotion can leave the trunk's or the notes ref's lock: every later move of that ref
    fails ('cannot lock ref'), and doctor said all was well. An old one is reported; --fix removes those on
    refs git-lanes writes, once no process holds them, and leaves a lock on any other ref to a person."""
    old = time.time() - 3600
    git_dir = repo / ".git"
    (git_dir / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    trunk, notes, other = (git_dir / "refs" / "heads" / "main.lock", git_dir / "refs" / "notes" / "lanes.lock",
                           git_dir / "refs" / "heads" / "people" / "topic.lock")
    fresh = git_dir / "refs" / "heads" / "live.lock"  # a git at work right now holds a lock like this one
    for lock in (trunk, notes, other, fresh):
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_text("0" * 40 + "\n")
        if lock is not fresh:
            os.utime(lock, (old, old))
    before = doctor(repo)
    messages = " | ".join(c["message"] for c in findings(before.json, "refs"))
    for lock in (trunk, notes, other):
        assert str(lock) in messages, lock
    assert str(fresh) not in messages
    fixed = doctor(repo, "--fix")
    assert not trunk.exists() and not notes.exists()
    assert other.exists() and fresh.exists()  # git's refs, for a person: doctor names them
    left = [c for c in findings(fixed.json, "refs") if c["status"] != "ok" and c["status"] != "fixed"]
    assert [str(other) in c["message"] for c in left] == [True] and "delete" in left[0]["hint"]
    git("update-ref", "refs/heads/main", "HEAD", cwd=repo)  # git can move the trunk again


def _oplog_check(repo: Path):
    result = run_cli("doctor", "--check", "oplog", "--json", cwd=repo)
    (found,) = result.json["checks"]
    return result.code, found


def _drop_object(repo: Path, oid: str) -> None:
    """Lose a commit as a copy of the git directory that left objects out would: its loose file goes."""
    (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    assert git("cat-file", "-t", oid, cwd=repo, check=False) == ""


def test_an_operation_log_naming_a_missing_commit_fails_its_check(repo: Path):
    api = Lanes(repo)
    api.lane_create("feature/a")
    api.lane_create("feature/b")
    assert _oplog_check(repo) == (0, {"check": "oplog", "status": "ok",
                                      "message": "2 operation log entries readable"})
    head = git("rev-parse", "refs/lanes/oplog", cwd=repo).strip()
    _drop_object(repo, head)
    code, found = _oplog_check(repo)
    assert code == 1 and found["status"] == "fail"
    assert found["message"] == ("the operation log cannot be read: refs/lanes/oplog names commit "
                                f"{head[:8]}, which is not in the repository")
    assert "git reflog refs/lanes/oplog" in found["hint"]
    for command in (("op", "log"), ("undo",)):  # they name the lost commit and the check, not a bare KeyError
        told = run_cli(*command, "--json", cwd=repo)
        assert told.code == 1 and told.json["error"] == "oplog_broken", told.err
        assert head[:8] in told.json["message"] and "doctor --check oplog" in told.json["hint"]


def test_an_operation_log_whose_chain_breaks_fails_its_check(repo: Path):
    api = Lanes(repo)
    for lane in ("feature/a", "feature/b", "feature/c"):
        api.lane_create(lane)
    newest, lost = git("rev-parse", "refs/lanes/oplog", "refs/lanes/oplog~1", cwd=repo).split()
    _drop_object(repo, lost)
    code, found = _oplog_check(repo)
    assert code == 1 and found["message"] == (
        f"the operation log cannot be read: its chain breaks at entry {newest[:8]} (number 1 from the newest): "
        f"its parent is commit {lost[:8]}, which is not in the repository")
    everything = run_cli("doctor", "--json", cwd=repo)  # the whole doctor fails with it, as with any check
    assert everything.code == 1 and not everything.json["ok"]


def test_an_operation_log_entry_that_cannot_be_read_fails_its_check(repo: Path):
    Lanes(repo).lane_create("feature/a")
    head = git("rev-parse", "refs/lanes/oplog", cwd=repo).strip()
    tree = git("rev-parse", f"{head}^{{tree}}", cwd=repo).strip()
    junk = git("commit-tree", tree, "-p", head, "-m", "not an entry", cwd=repo).strip()
    git("update-ref", "refs/lanes/oplog", junk, head, cwd=repo)
    code, found = _oplog_check(repo)
    assert code == 1 and found["message"] == (f"the operation log cannot be read: entry {junk[:8]}: operation "
                                              f"log commit {junk[:8]} holds no entry")
