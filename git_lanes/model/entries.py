"""What a tree holds at a path, and how a path differs between two trees: plain values that every layer
(the store that reads trees, the domain that plans promotions and restores, the ledger that writes its
records) passes around, so they live in the model rather than beside the code that reads git."""

from __future__ import annotations

from git_lanes.model.frozen import Frozen

TYPE_CHECKING = False  # typing is not loaded at run time: the hook path reads these values too
if TYPE_CHECKING:
    from typing import TypeVar

    E = TypeVar("E")


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


def split_edits(edits: dict[str, E]) -> tuple[dict[str, E], dict[str, dict[str, E]]]:
    """Tree edits by path, split at the first directory: (the top level's own names, the edits beneath each
    top-level directory by their paths inside it), as a tree builder applies them one level at a time."""
    leaves: dict[str, E] = {}
    grouped: dict[str, dict[str, E]] = {}
    for path, entry in edits.items():
        head, _, rest = path.partition("/")
        if rest:
            grouped.setdefault(head, {})[rest] = entry
        else:
            leaves[head] = entry
    return leaves, grouped
