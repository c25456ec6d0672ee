"""The merge gate: promotions into one target take turns. A flock per target in the common git dir, taken
before (never while holding) the writers' lock, so the writers' lock is held only for short steps while a
promotion's gates run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from git_lanes.store import lock


@contextmanager
def serialized(common_dir: Path, target: str) -> Iterator[None]:
    directory = common_dir / "lanes-merge-gate"
    directory.mkdir(exist_ok=True)
    with lock.exclusive(directory / f"{quote(target, safe='')}.lock"):
        yield
