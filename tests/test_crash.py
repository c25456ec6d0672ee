"""SIGKILL at many instants of `commit`, `accept` and `lane create`, run as real processes: afterwards
`git fsck` is clean, every transition acknowledged before is intact, and the next command works (no lock
file a dead process left blocks it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, run_cli, workspace
from kill_helpers import Killed, children_ended, killed_once_head_went

pytestmark = pytest.mark.slow

ROUNDS = 14


def start(*args: str, cwd: Path) -> subprocess.Popen:
    """The command in a process group of its own, so the git processes it starts can be told apart."""
    return subprocess.Popen([sys.executable, "-m", "git_lanes", *args, "--json"], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def kill_after(proc: subprocess.Popen, delay: float) -> bool:
    """Kill `proc` after `delay` seconds; True when it was still running (so the kill interrupted it)."""
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        children_ended(proc.pid)
        return True
    proc.communicate()
    return False


def instants(duration: float) -> list[float]:
    """Kill delays spread over a whole uninterrupted run, start-up included, so the kills land everywhere:
    interpreter start, imports, snapshot, object writes and each ref transaction. Half of them fall in the
    last 40%, where the writes are (imports take most of the rest)."""
    half = ROUNDS // 2
    whole = [duration * (i + 0.5) / half for i in range(half)]
    writes = [duration * (0.6 + 0.4 * (i + 0.5) / (ROUNDS - half)) for i in range(ROUNDS - half)]
    return sorted(whole + writes)


def timed_run(*args: str, cwd: Path) -> tuple[float, dict]:
    began = time.perf_counter()
    result = run_cli(*args, "--json", cwd=cwd)
    assert result.code == 0, result.err
    return time.perf_counter() - began, result.json


def assert_consistent(repo: Path, lane: str, acknowledged: list[dict]) -> None:
    fsck = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling"], cwd=repo, capture_output=True,
                          text=True)
    assert fsck.returncode == 0 and "error" not in fsck.stderr, fsck.stderr
    head = git("rev-parse", f"refs/lanes/heads/{lane}", cwd=repo).strip()
    for record in acknowledged:
        ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", record["to"], head], cwd=repo)
        assert ancestor.returncode == 0, f"acknowledged state {record['to']} is gone from {lane}"
        note = json.loads(git("notes", "--ref", "lanes", "show", record["to"], cwd=repo))
        assert (note["id"], note["status"]) == (record["id"], "accepted")


def edit(ws: Path, round_: int) -> None:
    (ws / "work.txt").write_text(f"round {round_}\n")
    (ws / "notes" / f"{round_}.txt").parent.mkdir(exist_ok=True)
    (ws / "notes" / f"{round_}.txt").write_text(f"{round_}\n" * 50)


def test_kill_during_commit_auto_accept(repo):
    run_cli("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    acknowledged = []
    edit(ws, 0)
    duration, record = timed_run("commit", "-m", "round 0", "--agent-id", "a", "--auto-accept", cwd=ws)
    acknowledged.append(record)
    interrupted = 0  # a sweep where every run finished before its kill proves nothing
    for round_, delay in enumerate(instants(duration), start=1):
        edit(ws, round_)
        interrupted += kill_after(start("commit", "-m", f"killed {round_}", "--agent-id", "a", "--auto-accept", cwd=ws), delay)
        assert_consistent(repo, "feat", acknowledged)
        # The next command works; when the killed one got as far as proposing, its proposal is still
        # pending, and the workspace may already equal it.
        after = run_cli("commit", "-m", f"after {round_}", "--agent-id", "a", "--auto-accept", "--json", cwd=ws)
        assert after.code == 0, after.err
        if after.json["status"] == "accepted":
            acknowledged.append(after.json)
        assert_consistent(repo, "feat", acknowledged)
    assert git("status", "--porcelain", cwd=ws) == ""
    assert interrupted, "every run finished before its kill: the sweep tested no crash"


def test_kill_during_accept(repo):
    run_cli("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    acknowledged = []
    edit(ws, 0)
    proposed = run_cli("propose", "-m", "round 0", "--agent-id", "a", "--json", cwd=ws).json
    duration, record = timed_run("accept", proposed["id"][:8], cwd=repo)
    acknowledged.append(record)
    interrupted = 0  # a sweep where every run finished before its kill proves nothing
    for round_, delay in enumerate(instants(duration), start=1):
        edit(ws, round_)
        proposal = run_cli("propose", "-m", f"round {round_}", "--agent-id", "a", "--json", cwd=ws)
        assert proposal.code == 0, proposal.err
        interrupted += kill_after(start("accept", proposal.json["id"], cwd=repo), delay)
        assert_consistent(repo, "feat", acknowledged)
        again = run_cli("accept", proposal.json["id"], "--json", cwd=repo)
        # Either this accept does it, or the killed one got far enough and recovery finished it.
        assert again.code == 0 or again.json["error"] == "already_decided", again.err
        shown = run_cli("show", proposal.json["id"], "--json", cwd=repo).json
        assert shown["status"] == "accepted"
        acknowledged.append(shown)
        assert not git("for-each-ref", "refs/lanes/proposals", cwd=repo).strip()
        assert_consistent(repo, "feat", acknowledged)
        # A kill after the lane moved but before the workspace's HEAD followed leaves HEAD one state behind
        # with the index already at the lane head; the next commit there catches it up (ensure_current).
        assert git("rev-parse", "HEAD", cwd=ws).strip() in (proposal.json["from"], proposal.json["to"])
    (ws / "last.txt").write_text("last\n")
    last = run_cli("commit", "-m", "last", "--agent-id", "a", "--auto-accept", "--json", cwd=ws)
    assert last.code == 0 and last.json["from"] == acknowledged[-1]["to"], last.err
    assert git("rev-parse", "HEAD", cwd=ws).strip() == last.json["to"]
    assert git("status", "--porcelain", cwd=ws) == ""
    assert interrupted, "every run finished before its kill: the sweep tested no crash"


def test_kill_during_reject(repo):
    run_cli("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    head = git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip()
    edit(ws, 0)
    proposed = run_cli("propose", "-m", "round 0", "--agent-id", "a", "--json", cwd=ws).json
    duration, _ = timed_run("reject", proposed["id"][:8], "--reason", "no", cwd=repo)
    interrupted = 0  # a sweep where every run finished before its kill proves nothing
    for round_, delay in enumerate(instants(duration), start=1):
        edit(ws, round_)
        proposal = run_cli("propose", "-m", f"round {round_}", "--agent-id", "a", "--json", cwd=ws)
        assert proposal.code == 0, proposal.err
        interrupted += kill_after(start("reject", proposal.json["id"], "--reason", "no", cwd=repo), delay)
        assert_consistent(repo, "feat", [])
        again = run_cli("reject", proposal.json["id"], "--reason", "no", "--json", cwd=repo)
        assert again.code == 0 or again.json["error"] == "already_decided", again.err
        assert run_cli("show", proposal.json["id"], "--json", cwd=repo).json["status"] == "rejected"
        kept = git("rev-parse", f"refs/lanes/rejected/{proposal.json['id']}", cwd=repo).strip()
        assert kept == proposal.json["to"]
        assert not git("for-each-ref", "refs/lanes/proposals", cwd=repo).strip()
        assert git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip() == head
    assert interrupted, "every run finished before its kill: the sweep tested no crash"


def test_kill_during_lane_create(repo):
    (repo / "src" / "more.py").write_text("x = 1\n" * 200)
    run_cli("commit", "-m", "more", "--agent-id", "a", "--auto-accept", cwd=repo)
    duration, _ = timed_run("lane", "create", "probe", cwd=repo)
    trunk = git("rev-parse", "refs/heads/main", cwd=repo).strip()
    interrupted = 0  # a sweep where every run finished before its kill proves nothing
    for round_, delay in enumerate(instants(duration)):
        name = f"lane{round_}"
        interrupted += kill_after(start("lane", "create", name, cwd=repo), delay)
        fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
        again = run_cli("lane", "create", name, "--json", cwd=repo)
        assert again.code == 0 or again.json["error"] == "lane_exists", again.err
        ws = workspace(repo, name)
        assert run_cli("lane", "path", name, cwd=repo).out.strip() == str(ws)
        assert git("rev-parse", "HEAD", cwd=ws).strip() == trunk
        assert git("status", "--porcelain", cwd=ws) == ""
        assert str(ws) in git("worktree", "list", cwd=repo)
        (ws / "mine.txt").write_text(name)
        committed = run_cli("commit", "-m", "works", "--agent-id", "a", "--auto-accept", "--json", cwd=ws)
        assert committed.code == 0 and committed.json["status"] == "accepted", committed.err
    assert interrupted, "every run finished before its kill: the sweep tested no crash"


@pytest.mark.parametrize("leftover", ["refs/lanes/heads/feat.lock", "refs/notes/lanes.lock", "worktree-index",
                                      "worktree-HEAD"])
def test_a_lock_file_left_by_a_dead_process_does_not_block(repo, leftover):
    run_cli("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    admin = Path(git("rev-parse", "--absolute-git-dir", cwd=ws).strip())
    lock = {"worktree-index": admin / "index.lock", "worktree-HEAD": admin / "HEAD.lock"}.get(
        leftover, repo / ".git" / leftover)
    lock.write_text("")
    (ws / "f.txt").write_text("f\n")
    result = run_cli("commit", "-m", "f", "--agent-id", "a", "--auto-accept", "--json", cwd=ws)
    assert result.code == 0 and result.json["status"] == "accepted", result.err
    assert not lock.exists()


def test_a_lock_held_open_by_a_live_process_is_left_alone(repo):
    run_cli("lane", "create", "feat", cwd=repo)
    ws = workspace(repo, "feat")
    lock = repo / ".git" / "refs" / "lanes" / "heads" / "feat.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'w'); "
                               "print('held', flush=True); time.sleep(60)", str(lock)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        (ws / "f.txt").write_text("f\n")
        result = run_cli("commit", "-m", "f", "--agent-id", "a", "--auto-accept", cwd=ws)
        assert result.code == 3, result.err
        assert str(lock) in result.err and "Traceback" not in result.err
        assert lock.exists()
    finally:
        holder.kill()
        holder.wait()
        os.unlink(lock)


def test_a_kill_while_a_workspace_s_private_git_dir_is_deleted_leaves_fsck_clean(repo, monkeypatch):
    """The sweep below rarely lands in it (a few unlinks): deleted in place, the private dir lost its HEAD
    before its `gitdir`, and git listed a worktree with no HEAD, which `git fsck` reports as an error."""
    import shutil

    from git_lanes.api import Lanes

    assert run_cli("lane", "create", "gone", cwd=repo).code == 0
    ws = workspace(repo, "gone")
    admin = Path(git("rev-parse", "--absolute-git-dir", cwd=ws).strip())
    monkeypatch.setattr(shutil, "rmtree", killed_once_head_went(shutil.rmtree))
    with pytest.raises(Killed):
        Lanes(repo).ctx.store.remove_worktree(ws)
    monkeypatch.undo()
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert not admin.exists()
    assert str(ws) not in git("worktree", "list", cwd=repo)
    again = run_cli("lane", "delete", "gone", "--force", "--json", cwd=repo)
    assert again.code == 0, again.err

def test_kill_during_lane_delete(repo):
    duration = None
    interrupted = 0  # a sweep where every run finished before its kill proves nothing
    for round_ in range(ROUNDS + 1):
        name = f"gone{round_}"
        assert run_cli("lane", "create", name, cwd=repo).code == 0
        ws = workspace(repo, name)
        (ws / "work.txt").write_text(f"{round_}\n")
        head = run_cli("commit", "-m", "work", "--agent-id", "a", "--auto-accept", "--json", cwd=ws).json["to"]
        if duration is None:
            duration, _ = timed_run("lane", "delete", name, "--force", cwd=repo)
            delays = iter(instants(duration))
            continue
        interrupted += kill_after(start("lane", "delete", name, "--force", cwd=repo), next(delays))
        fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
        kept = {git("for-each-ref", "--format=%(objectname)", ref, cwd=repo).strip()
                for ref in (f"refs/lanes/deleted/{name}", f"refs/lanes/heads/{name}")}
        assert head in kept, "the lane's work must stay reachable from a ref"
        again = run_cli("lane", "delete", name, "--force", "--json", cwd=repo)
        # finishing the delete, or (its ref already gone, so its workspace too) saying it is done: exit 3
        assert again.code == 0 or again.json["error"] in ("unknown_lane", "lane_deleted"), again.err
        assert git("rev-parse", f"refs/lanes/deleted/{name}", cwd=repo).strip() == head
        assert not ws.exists() and str(ws) not in git("worktree", "list", cwd=repo)
    assert interrupted, "every run finished before its kill: the sweep tested no crash"
