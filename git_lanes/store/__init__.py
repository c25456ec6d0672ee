"""The storage layer: the only code that imports pygit2 or runs the git CLI.

`Store` (pygit2) loads on first use, so the light modules the agent-hook path needs (`gitfiles`, `ref_files`,
`objects`, `runlog`) can be imported without paying for pygit2."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import …`: the agent-hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

    from git_lanes.store.repo import Store, open_store
    from git_lanes.store.values import RefUpdate

__all__ = ["RefUpdate", "Store", "open_store"]


def __getattr__(name: str) -> Any:
    if name == "RefUpdate":  # a value, needing no pygit2: the light sync path builds them too
        from git_lanes.store import values

        return values.RefUpdate
    if name in __all__:
        from git_lanes.store import repo

        return getattr(repo, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
