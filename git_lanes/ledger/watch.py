"""Noticing that the ledger moved without taking any lock: the loose ref's content and packed-refs' stat.

libgit2 and git both move a ref by renaming a new file over the loose ref, so reading those 41 bytes shows
every append exactly (a stat could miss one: coarse mtimes and reused inodes); a `git pack-refs` moves the
ref into packed-refs, whose stat changes then. Polling both every few milliseconds costs microseconds, needs
no dependency, and never blocks a writer."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from git_lanes.model.refs import LEDGER

POLL_SECONDS = 0.005


class LedgerWatch:
    def __init__(self, common_dir: Path) -> None:
        self._paths = (common_dir / LEDGER, common_dir / "packed-refs")
        self._seen = self._signature()

    def _signature(self) -> tuple:
        loose, packed = self._paths
        try:
            content: bytes | None = loose.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            content = None
        try:
            st = os.stat(packed)
            packed_mark: tuple | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            packed_mark = None
        return content, packed_mark

    def changed(self) -> bool:
        """True once for each change since the last call (or since the watch began)."""
        now = self._signature()
        if now != self._seen:
            self._seen = now
            return True
        return False

    def wait(self, deadline: float, stop: threading.Event | None = None) -> bool:
        """Sleep until the ledger may have moved (True), or `deadline` (monotonic) passes or `stop` is set
        (False)."""
        while True:
            if self.changed():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (stop is not None and stop.is_set()):
                return False
            if stop is None:
                time.sleep(min(POLL_SECONDS, remaining))
            elif stop.wait(min(POLL_SECONDS, remaining)):
                return False
