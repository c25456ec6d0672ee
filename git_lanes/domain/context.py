from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from git_lanes.store import Store


@dataclass
class Context:
    """What every domain operation needs: the repository, the trunk's name, and a clock."""

    store: Store
    trunk: str
    clock: Callable[[], float] = field(default=time.time)

    def now(self) -> float:
        return round(self.clock(), 3)
