"""The local writers' lock: one flock'd file in the common git dir. The kernel drops it when a holder dies,
so a killed process never leaves the repository locked."""

from __future__ import annotations

import fcntl
import os

TYPE_CHECKING = False  # names for annotations only: the hook path loads nothing for them
if TYPE_CHECKING:
    StrPath = str | os.PathLike[str]


# What a write into the repository's own folder fails with when this user may not write there at all (its owner
# or mode, a read-only mount, a full disk), in the C library's words, which git's messages carry too.
UNWRITABLE = ("Permission denied", "Operation not permitted", "Read-only file system", "No space left on device",
              "Disk quota exceeded")


def unwritable(why: str, where: StrPath) -> Exception:
    """The error for a repository this process cannot write in (`why`: what the system said, at `where`):
    the user's to fix here, never the remote's."""
    from git_lanes.errors import write_cause, write_refused

    return write_refused(f"cannot write in this repository: {why} ({os.fspath(where)})",
                         write_cause(why) or "EACCES", os.fspath(where))


def _open(path: StrPath) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno is not None and os.strerror(exc.errno) in UNWRITABLE:
            raise unwritable(os.strerror(exc.errno), path) from None
        raise


def exclusive(path: StrPath) -> Exclusive:
    """Hold the lock at `path` for the body, waiting for it."""
    return Exclusive(path)


def exclusive_if_free(path: StrPath) -> ExclusiveIfFree:
    """Hold the lock at `path` for the body if nobody holds it now (True), else hold nothing (False)."""
    return ExclusiveIfFree(path)


# Context manager classes rather than contextlib generators: contextlib loads collections and functools
# (~3 ms of a light sync's or a hook call's start-up), which nothing else on those paths needs.
class Exclusive:
    def __init__(self, path: StrPath) -> None:
        self.path = path
        self.fd = -1  # the lock's descriptor while it is held

    def __enter__(self) -> None:
        fd = _open(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def __exit__(self, *_: object) -> None:
        fd, self.fd = self.fd, -1
        if fd < 0:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


class ExclusiveIfFree(Exclusive):
    def __enter__(self) -> bool:  # type: ignore[override]
        fd = _open(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return True
