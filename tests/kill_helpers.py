"""What the kill tests share: waiting for what a killed command left running, and a deletion stopped where a
SIGKILL would stop it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Killed(BaseException):
    """Where a SIGKILL would have stopped the process."""


def children_ended(group: int) -> None:
    """Wait for the git processes a killed command started (`git add -A` in the workspace, `git reset`,
    `git worktree remove`): a SIGKILL reaches the command alone, and they run on. Checked at once, the
    repository is one they are still writing: `git fsck` reports a private dir git is deleting file by file,
    and the next command finds the workspace's index taken by a live git and rightly refuses (exit 3)."""
    deadline = time.monotonic() + 120
    while _group_alive(group):
        assert time.monotonic() < deadline, "a killed command's git processes never ended"
        time.sleep(0.01)


def _group_alive(group: int) -> bool:
    """Whether a process of process group `group` runs (a zombie waiting for init to reap it does not)."""
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        return True
    for pid in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text() if pid.isdigit() else ""
        except OSError:
            continue  # it ended meanwhile
        fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
        if len(fields) > 2 and fields[2] == str(group) and fields[0] != "Z":
            return True
    return False


def killed_once_head_went(deleting: Callable[..., Any]) -> Callable[..., Any]:
    """`shutil.rmtree` that, given a worktree's private git dir, deletes its HEAD and then dies (Killed): the
    instant at which a deletion in place left git a worktree with no HEAD."""
    def rmtree(path: Any, *args: Any, **kwargs: Any) -> Any:
        if (Path(path) / "HEAD").is_file() and (Path(path) / "gitdir").is_file():
            (Path(path) / "HEAD").unlink()
            raise Killed
        return deleting(path, *args, **kwargs)
    return rmtree
