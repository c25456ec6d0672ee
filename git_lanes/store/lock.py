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


@contextmanager
def exclusive(path: StrPath) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def exclusive_if_free(path: StrPath) -> Iterator[bool]:
    """Hold the lock at `path` for the body if nobody holds it now (True), else hold nothing (False)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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
