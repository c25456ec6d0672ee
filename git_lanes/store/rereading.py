"""Reads tried once more after libgit2's view of the pack folder went stale: every Store method that reads
objects (repo.py, notes.py) is wrapped in `rereading`, which asks `reloaded` whether reading again can help."""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import pygit2

F = TypeVar("F", bound=Callable[..., Any])


class Store(Protocol):
    """What of Store (repo.py) is read here: a protocol, since repo.py imports this module."""

    repo: pygit2.Repository
    common_dir: Path
    _walking: int  # revision walks under way, which read on their own
    _workspace_repos: dict[Path, pygit2.Repository]


# The stores this process holds open, and for each repository's pack folder its state when libgit2 was last
# made to load it (`reloaded`).
OPEN: weakref.WeakSet[Store] = weakref.WeakSet()
_PACKS_SEEN: dict[str, tuple[object, ...]] = {}


def rereading(read: F) -> F:
    """`read`, tried once more where libgit2 failed it and the pack folder changed since libgit2 last loaded
    it (`reloaded`): a read that fails for good costs one listing of that folder more."""
    @functools.wraps(read)
    def again(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return read(self, *args, **kwargs)
        except (KeyError, pygit2.GitError):
            if not reloaded(self):
                raise
        return read(self, *args, **kwargs)
    return cast(F, again)


def reloaded(store: Store) -> bool:
    """Make libgit2 load `store`'s object folder afresh where its pack folder changed since it last did (True:
    the caller reads again). libgit2 keeps the multi-pack-index it loaded, and where that index names packs
    a repack removed (`git -c core.multiPackIndex=false repack -a -d`, `gc` alike, or a `multi-pack-index
    write` racing a repack), a held-open process (SDK, MCP, serve) failed to find lane states, notes and
    commits ("invalid packfile", or not found) that git and a new process read; its own refresh on a miss
    keeps that index, since the file did not change. libgit2 keeps one copy of each pack per process,
    shared by every repository that loaded it, so every store here on this repository lets go (the MCP
    server and `serve` hold one per worker thread), but for one in a revision walk, which reads on its
    own; once per change of the folder."""
    pack_dir = os.path.join(store.common_dir, "objects", "pack")
    try:
        folder = os.stat(pack_dir)
        seen: tuple[object, ...] = (folder.st_mtime_ns, folder.st_ino)
    except OSError:
        seen = ()
    try:
        index = os.stat(os.path.join(pack_dir, "multi-pack-index"))
        seen += (index.st_mtime_ns, index.st_size, index.st_ino)
    except OSError:
        pass
    if _PACKS_SEEN.get(pack_dir) == seen:
        return False
    _PACKS_SEEN[pack_dir] = seen
    for other in list(OPEN):
        if other is store or (other.common_dir == store.common_dir and not other._walking):
            other.repo.free()  # libgit2 opens its object database again on the next read
            for workspace_repo in other._workspace_repos.values():
                workspace_repo.free()
    return True
