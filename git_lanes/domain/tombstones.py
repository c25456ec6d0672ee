"""Tombstones in the ledger: a ref `git lanes gc` pruned is recorded at `pruned/<oid[:2]>/<oid>.json` (the refs
that pointed at that commit), so sync deletes it on either side instead of copying it back (see upkeep). Kept
apart from upkeep so a sync reads them without loading gc's collaborators."""

from __future__ import annotations

from git_lanes.model import refs

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from git_lanes.domain.agents import Reader

# Refs of these kinds travel on sync, so pruning them leaves a tombstone.
TRAVELLING = (refs.REJECTED, refs.RUNS)


def tombstone_path(oid: str) -> str:
    return f"pruned/{oid[:2]}/{oid}.json"


def pruned_refs(state: Reader, oid: str | None) -> set[str]:
    """The refs gc pruned while they pointed at commit `oid`."""
    if not oid:
        return set()
    record = state.get(tombstone_path(oid))
    return set(record.get("refs", [])) if record else set()
