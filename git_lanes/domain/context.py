from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # a store of either kind: pygit2's, or the light one a sync with nothing to replay uses
    from collections.abc import Callable  # for annotations only: collections costs a light sync ~1 ms

    from git_lanes.store import Store


class Context:
    """What every domain operation needs: the repository, the trunk's name, and a clock. (A plain class, not
    a dataclass: every command that opens a repository builds one, and a dataclass costs ~1 ms to define.)"""

    __slots__ = ("store", "trunk", "clock")

    def __init__(self, store: Store, trunk: str, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.trunk = trunk
        self.clock = clock

    def now(self) -> float:
        return round(self.clock(), 3)
