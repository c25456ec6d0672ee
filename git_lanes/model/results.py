"""What the foundation's API returns (lanes, transitions, history), as records: one definition for the CLI's
`--json`, the MCP tool results, the SDK's types and the HTTP OpenAPI document."""

from __future__ import annotations

from typing import Any

from git_lanes.model.record import Record, meta
from git_lanes.model.record import Unreadable as Unreadable  # where it was first defined
from git_lanes.model.records import CostTotals, Status, Transition


class LaneInfo(Record):
    """A lane: its ref and head, whether it is the trunk, and its workspace here (None when not checked out)."""

    # Read back from refs, so as lenient as what may exist: a lane named under an older, looser rule still lists.
    name: str
    ref: str
    head: str
    trunk: bool
    workspace: str | None
    broken: str | None = meta(omit="none", default=None, doc="why its workspace cannot be used")


class LaneCreated(LaneInfo):
    """`created` is False when the lane existed and only its workspace was made here."""

    created: bool = True
    setup: dict[str, Any] | None = meta(omit="none", default=None, doc="what the trunk's [setup] did")


class Totals(CostTotals):
    """Cost summed over the transitions that matched, and how many there were."""

    count: int = 0


class History(Record):
    """Transitions newest first (at most the limit asked for), totals over all that matched, and how many
    of them have each status; `unreadable` lists the notes set aside as malformed."""

    transitions: tuple[Transition, ...]
    totals: Totals
    counts: dict[Status, int]
    unreadable: tuple[Unreadable, ...] = meta(omit="empty", default=(), doc="notes that could not be read")


class PathChange(Record):
    path: str
    kind: str


class TransitionDetail(Transition):
    """A transition with the paths it changed against the state it was proposed on."""

    changes: tuple[PathChange, ...] = ()
