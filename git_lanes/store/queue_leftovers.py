"""What the ledger's append queue (`<common git dir>/lanes-queue/`, append_queue.py) holds that no live
process owns, judged by the queue's own rules, for `doctor` to report and `gc` to remove.

The queue cleans up after itself, but only when someone appends: a holder drops the entries of writers that
are gone and outcomes nobody came for once they are `STALE_SECONDS` old, and settles the round journal of a
holder that died. In a repository nobody appends to any more, what a killed process left stays. These
functions apply the same rules on demand: an entry whose writer is alive, and an outcome or a half-written file
younger than the queue's stale age, are never touched."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

# The queue's own rules, not copies of them: its liveness test and its stale age.
from git_lanes.store.append_queue import JOURNAL, AppendQueue


@dataclass(frozen=True)
class Leftovers:
    """File names in the queue's folder."""

    dead: tuple[str, ...] = ()  # entries (`.op`, `.taken`) of writers that are gone
    stale: tuple[str, ...] = ()  # outcomes (`.done`) nobody came for, half-written `.tmp` files, once old
    journal: bool = False  # a round journal (`batch`) whose holder is gone
    in_the_way: bool = False  # something not a folder holds the queue's name: writers wait for the lock instead

    def files(self) -> list[str]:
        return [*self.dead, *self.stale, *([JOURNAL] if self.journal else [])]


def survey(common_dir: str | os.PathLike[str], holder_gone: bool) -> Leftovers:
    """What the queue holds that no live process owns. `holder_gone`: the caller holds the writers' lock, so a
    journal there is a dead holder's (otherwise it is not reported: a live holder may be writing it)."""
    queue = AppendQueue(common_dir)
    try:
        files = sorted(os.listdir(queue.folder))
    except NotADirectoryError:
        return Leftovers(in_the_way=True)
    except OSError:
        # A symlink to nothing holds the name as surely as a file: the folder cannot be made there either.
        return Leftovers(in_the_way=os.path.islink(queue.folder))
    now = time.time()
    dead, stale = [], []
    for file in files:
        if file.endswith((".done", ".tmp")):
            if queue.stale(file, now):
                stale.append(file)
        elif file.endswith((".op", ".taken")) and queue.live_entry(file) is None:
            dead.append(file)
    return Leftovers(tuple(dead), tuple(stale), holder_gone and JOURNAL in files)


def clear(common_dir: str | os.PathLike[str]) -> Leftovers:
    """Remove the dead writers' entries and the stale files, as the queue's next holder would (its own
    `waiting`, over the whole queue), and return what went. Call with the writers' lock held. The journal is
    not removed here: the ledger settles it (`ledger.combine.recover`), giving its ops' waiters their outcomes."""
    found = survey(common_dir, holder_gone=False)
    queue = AppendQueue(common_dir)
    queue.waiting(sys.maxsize)  # spares of processes that are gone go too, unreported: kept files, not leftovers
    if not (found.dead or found.stale):
        return Leftovers()
    left = set(os.listdir(queue.folder)) if os.path.isdir(queue.folder) else set()
    return Leftovers(tuple(f for f in found.dead if f not in left), tuple(f for f in found.stale if f not in left))
