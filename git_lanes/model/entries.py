"""What a tree holds at a path, and how a path differs between two trees: plain values that every layer
(the store that reads trees, the domain that plans promotions and restores, the ledger that writes its
records) passes around, so they live in the model rather than beside the code that reads git."""

from __future__ import annotations

from git_lanes.model.frozen import Frozen

GITLINK = 0o160000  # an entry's mode when it names a commit of another repository (a submodule, a nested clone)


class Entry(Frozen):
    """A blob (or link, or gitlink) at a path: what a tree-edit writes."""

    oid: str
    mode: int


class Change(Frozen):
    """One path that differs between two trees. `kind` is added, deleted, modified, mode, or type."""

    path: str
    kind: str
    old: Entry | None
    new: Entry | None
