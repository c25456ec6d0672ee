"""Whether a process that named a file after itself still runs (store/stale.py `alive`): what decides if a
publish lock, an append-queue entry or a worktree draft is abandoned."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from git_lanes.store.stale import alive


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="zombies are told apart through /proc")
def test_a_process_that_exited_and_was_not_reaped_is_not_alive():
    """A killed child a held-open process has not reaped yet is a zombie: signals still reach it, so it counted
    as alive and the publish lock it held stayed taken until its time-to-live ran out."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(f"/proc/{child.pid}/stat", "rb") as handle:
                if handle.read().rpartition(b")")[2][1:2] == b"Z":
                    break
            time.sleep(0.01)
        else:
            pytest.fail("the child never exited")
        os.kill(child.pid, 0)  # the precondition: signals still reach it
        assert not alive(child.pid)
    finally:
        child.wait()
    assert not alive(child.pid)
    assert alive(os.getpid())
