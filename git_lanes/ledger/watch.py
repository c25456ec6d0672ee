"""Noticing that the ledger moved without taking any lock, through the store's shared ref watcher
(store/refwatch.py): the loose ref's content and packed-refs, read as git writes them. Reading the ref's
value, not a stat, shows every append exactly (coarse mtimes and reused inodes could hide one), and a
`git pack-refs`, which moves nothing, wakes nobody. Polling every few milliseconds costs microseconds,
needs no dependency, and never blocks a writer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from git_lanes.model.refs import LEDGER
from git_lanes.store.refwatch import RefWatch

POLL_SECONDS = 0.005


class LedgerWatch:
    def __init__(self, common_dir: Path) -> None:
        self._refs = RefWatch(common_dir, (LEDGER,))

    def changed(self) -> bool:
        """True once for each change since the last call (or since the watch began)."""
        return bool(self._refs.moves())

    def wait(self, deadline: float, stop: threading.Event | None = None) -> bool:
        """Sleep until the ledger moved (True), or `deadline` (monotonic) passes or `stop` is set (False)."""
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
