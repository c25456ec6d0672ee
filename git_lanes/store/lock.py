"""The local writers' lock: one flock'd file in the common git dir. The kernel drops it when a holder dies,
so a killed process never leaves the repository locked."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager

TYPE_CHECKING = False  # names for annotations only: the hook path loads nothing for them
if TYPE_CHECKING:
    from collections.abc import Iterator

    StrPath = str | os.PathLike[str]


# What a write into the repository's own folder fails with when this user may not write there at all (its owner
# or mode, a read-only mount, a full disk), in the C library's words, which git's messages carry too.
UNWRITABLE = ("Permission denied", "Operation not permitted", "Read-only file system", "No space left on device",
              "Disk quota exceeded")


def unwritable(why: str, where: StrPath) -> Exception:
    """The error for a repository this process cannot write in (`why`: what the system said, at `where`):
    the user's to fix here, never the remote's."""
    from git_lanes.errors import UserError  # here: the hook path loads the error classes only to raise one

    return UserError(f"cannot write in this repository: {why} ({os.fspath(where)})", code="repository_unwritable",
                     hint="git-lanes keeps its state under .git: check that you own it and may write there "
                          "(`ls -ld .git .git/refs`) and that its file system is not read-only or full")


def _open(path: StrPath) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno is not None and os.strerror(exc.errno) in UNWRITABLE:
            raise unwritable(os.strerror(exc.errno), path) from None
        raise


@contextmanager
def exclusive(path: StrPath) -> Iterator[None]:
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def exclusive_if_free(path: StrPath) -> Iterator[bool]:
    """Hold the lock at `path` for the body if nobody holds it now (True), else hold nothing (False)."""
    fd = _open(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
