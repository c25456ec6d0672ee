"""What killed processes leave in the ledger's append queue (`.git/lanes-queue/`): `doctor` reports it with
what to do, `doctor --fix` and `gc` remove it by the queue's own rules (store/append_queue.py), and nothing a
live process owns is reported or touched. Real processes: a live writer is a running process, a dead one a
process that has exited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git, run_cli

from git_lanes.api import Lanes
from git_lanes.store.append_queue import JOURNAL_SPARE, STALE_SECONDS

HINT = ("killed git-lanes processes left them: --fix (or `git lanes gc`) removes them, as the next ledger "
        "append would, settling a journal's ops first")


@pytest.fixture
def live_pid() -> Iterator[int]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def leave(queue: Path, name: str, content: object, age: float = 0.0) -> None:
    queue.mkdir(exist_ok=True)
    path = queue / name
    path.write_text(json.dumps(content))
    if age:
        then = time.time() - age
        os.utime(path, (then, then))


def leftovers(repo: Path, live: int) -> Path:
    """A queue as killed processes leave it, beside what live ones own; returns the folder."""
    queue = repo / ".git" / "lanes-queue"
    Lanes(repo).board_post("first", "lead")
    head = git("rev-parse", "refs/lanes/ledger", cwd=repo).strip()
    old = STALE_SECONDS + 60
    leave(queue, "00000000000000000001-dead.op", {"op": {}, "pid": dead_pid()})
    leave(queue, "00000000000000000002-dead.taken", {"op": {}, "pid": dead_pid()})
    leave(queue, "00000000000000000003-live.op", {"op": {}, "pid": live})
    leave(queue, "00000000000000000004-old.done", {"op": "x"}, age=old)
    leave(queue, "00000000000000000005-new.done", {"op": "y"})
    leave(queue, f"00000000000000000006-old.op.{live}.tmp", {}, age=old)
    leave(queue, f"00000000000000000007-new.op.{live}.tmp", {})
    leave(queue, "batch", {"old": head, "new": "0" * 40, "outcomes": {}})  # a round that never moved the ledger
    return queue


KEPT = {"00000000000000000003-live.op", "00000000000000000005-new.done", "00000000000000000007-new.op.{}.tmp"}


def kept(live: int) -> set[str]:
    """What is left once the leftovers are gone: the live processes' files, and the settled journal's file,
    kept for the next round's journal."""
    return {name.format(live) for name in KEPT} | {JOURNAL_SPARE}


def test_doctor_reports_what_no_live_process_owns_and_fix_removes_it(repo: Path, live_pid: int):
    queue = leftovers(repo, live_pid)
    result = run_cli("doctor", "--check", "queue", "--json", cwd=repo)
    assert result.code == 0, result.err  # a warning, as the other leftovers doctor reports
    assert result.json["checks"] == [{
        "check": "queue", "status": "warn",
        "message": "the ledger's append queue (lanes-queue) holds what no live process owns: entries of writers "
                   "that are gone: 00000000000000000001-dead.op, 00000000000000000002-dead.taken; files nobody "
                   "came for in 10 minutes: 00000000000000000004-old.done, "
                   f"00000000000000000006-old.op.{live_pid}.tmp; the round journal (batch) of a holder that died",
        "hint": HINT, "fixable": True}]
    assert len(os.listdir(queue)) == 8  # doctor only looked
    fixed = run_cli("doctor", "--check", "queue", "--fix", "--json", cwd=repo)
    assert fixed.code == 0 and [c["status"] for c in fixed.json["checks"]] == ["fixed"], fixed.out
    assert set(os.listdir(queue)) == kept(live_pid)
    again = run_cli("doctor", "--check", "queue", "--json", cwd=repo)
    assert again.json["checks"] == [{"check": "queue", "status": "ok",
                                     "message": "the ledger's append queue holds nothing a killed process left"}]


def test_gc_removes_what_the_queue_would_drop_and_keeps_what_live_processes_own(repo: Path, live_pid: int):
    queue = leftovers(repo, live_pid)
    expected = {"dead_entries": ["00000000000000000001-dead.op", "00000000000000000002-dead.taken"],
                "stale_files": ["00000000000000000004-old.done", f"00000000000000000006-old.op.{live_pid}.tmp"],
                "journal": True}
    dry = run_cli("gc", "--dry-run", "--json", cwd=repo)
    assert dry.code == 0 and dry.json["queue"] == expected, dry.err
    assert len(os.listdir(queue)) == 8
    text = run_cli("gc", "--dry-run", cwd=repo)
    assert ("would remove 4 append queue leftovers: 00000000000000000001-dead.op, 00000000000000000002-dead.taken, "
            f"00000000000000000004-old.done, 00000000000000000006-old.op.{live_pid}.tmp\n"
            "would settle the round journal of a holder that died\n") in text.out
    done = run_cli("gc", "--json", cwd=repo)
    assert done.code == 0 and done.json["queue"] == expected, done.err
    assert set(os.listdir(queue)) == kept(live_pid)
    assert run_cli("gc", "--json", cwd=repo).json["queue"] == {"dead_entries": [], "stale_files": [],
                                                               "journal": False}


def test_a_journal_while_a_holder_works_is_not_reported(repo: Path):
    """The writers' lock taken (a holder at work, here a process holding it): its journal is in flight."""
    queue = repo / ".git" / "lanes-queue"
    leave(queue, "batch", {"old": "x", "new": "y", "outcomes": {}})
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)",
                               str(repo / ".git" / "lanes.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = run_cli("doctor", "--check", "queue", "--json", cwd=repo)
    finally:
        holder.kill()
        holder.wait()
    assert result.code == 0 and [c["status"] for c in result.json["checks"]] == ["ok"], result.out
    assert (queue / "batch").exists()


def test_doctor_names_a_file_where_the_queue_folder_goes_and_leaves_it(repo: Path):
    blocker = repo / ".git" / "lanes-queue"
    blocker.write_text("someone's file\n")
    result = run_cli("doctor", "--check", "queue", "--json", cwd=repo)
    assert result.code == 0, result.err
    [check] = result.json["checks"]
    assert check["status"] == "warn" and "lanes-queue in the git directory is not a folder" in check["message"]
    assert not check.get("fixable")
    run_cli("doctor", "--check", "queue", "--fix", cwd=repo)
    assert blocker.read_text() == "someone's file\n"


def test_doctor_names_a_symlink_to_nothing_where_the_queue_folder_goes(repo: Path, tmp_path: Path):
    """A dangling symlink takes the queue's name as a file does (appends wait for the lock, as they do then);
    doctor said the queue was fine."""
    blocker = repo / ".git" / "lanes-queue"
    blocker.symlink_to(tmp_path / "nowhere")
    assert run_cli("board", "post", "still lands", "--agent", "a", cwd=repo).code == 0
    result = run_cli("doctor", "--check", "queue", "--json", cwd=repo)
    assert result.code == 0, result.err
    [check] = result.json["checks"]
    assert check["status"] == "warn" and "lanes-queue in the git directory is not a folder" in check["message"]
    assert blocker.is_symlink() and not (tmp_path / "nowhere").exists()
