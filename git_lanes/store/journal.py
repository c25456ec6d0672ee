"""Intent journals: a running process writes what it is about to do to a file of its own, one JSON object a
line, holding an exclusive `flock` on it for as long as it runs, and removes it when done. A journal whose
lock can be taken belongs to a process that is gone (a kill, a crash): whoever finds it finishes the record
from it. The kernel releases the lock with the process, so a reused pid is never mistaken for the owner.

Lines are appended whole and flushed at once (not fsynced: a killed process loses nothing the kernel has;
the refs they describe are not fsynced either); a torn last line is skipped by the reader."""

from __future__ import annotations

import fcntl
import os

from git_lanes.model import jsontext

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


class Journal:
    """One process's journal in `folder` (made on the first line written, so an operation that records
    nothing touches no disk)."""

    def __init__(self, folder: str, name: str) -> None:
        self.path = os.path.join(folder, name)
        self._fd: int | None = None

    def write(self, record: dict[str, Any]) -> None:
        try:
            if self._fd is None:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                fcntl.flock(fd, fcntl.LOCK_EX)  # ours alone: nobody else opens this name
                self._fd = fd
            os.write(self._fd, (jsontext.dumps(record, separators=(",", ":")) + "\n").encode())
        except OSError as exc:  # a full disk: the line names no path of its own
            from git_lanes.errors import write_failed

            raise write_failed(exc, "write the journal", self.path) or exc from exc

    def release(self) -> None:
        """Not done: the journal stays, its lock let go, for the next writer to finish from (`orphans`)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        """Done: the journal goes (removed before its lock is let go, so nobody takes it for an orphan)."""
        if self._fd is None:
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        os.close(self._fd)
        self._fd = None


def orphans(folder: str) -> Iterator[tuple[str, list[dict[str, Any]], int]]:
    """Journals in `folder` whose process is gone: (path, their whole lines, the lock's descriptor). The
    caller records what they say, then calls `finish(path, fd)`; a journal whose process still runs is
    skipped."""
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return
    for name in names:
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # its process is alive
            continue
        if not os.path.exists(path):  # finished and removed between the listing and the lock
            os.close(fd)
            continue
        with open(path, "rb") as handle:
            data = handle.read()
        records = []
        for line in data.split(b"\n"):
            try:
                record = jsontext.loads(line)
            except ValueError:
                continue  # a torn last line: the process died writing it, before what it announced
            if isinstance(record, dict):
                records.append(record)
        yield path, records, fd


def has_orphans(folder: str) -> bool:
    """Whether `folder` holds a journal of a process that is gone (a live one's is not), taking no lock
    for longer than the look."""
    found = False
    for path, _, fd in orphans(folder):
        os.close(fd)  # left for `orphans` to take again and finish, under the caller's lock
        found = True
    return found


def orphan_records(folder: str) -> list[list[dict[str, Any]]]:
    """The lines of each journal in `folder` whose process is gone, read and left as they are, for the next
    writer to finish (a look, taking no lock for longer than the read)."""
    found = []
    for _, records, fd in orphans(folder):
        os.close(fd)
        found.append(records)
    return found


def finish(path: str, fd: int) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    os.close(fd)
