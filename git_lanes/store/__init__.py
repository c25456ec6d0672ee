"""The storage layer: the only code that imports pygit2 or runs the git CLI."""

from git_lanes.store.repo import RefUpdate, Store, open_store

__all__ = ["RefUpdate", "Store", "open_store"]
