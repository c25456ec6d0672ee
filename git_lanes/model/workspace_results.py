"""What the API returns about workspaces and their snapshots (status, lane show, commit, accept), as records:
one definition for the CLI's `--json`, the MCP tool results and output schemas, the SDK's types and the HTTP
OpenAPI document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from git_lanes.model.record import Record, meta
from git_lanes.model.records import Transition
from git_lanes.model.results import LaneInfo, Totals


@dataclass(frozen=True)
class LeftPending(Record):
    """Paths a promotion still has to write in a worktree whose lane moved meanwhile: the next command run
    there finishes them."""

    reason: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class WorktreeUpdate(Record):
    """What accepting a promotion did to the target's checked-out worktree: the paths it wrote, and those it
    left for attention because they hold unsaved edits (never clobbered)."""

    path: str
    updated: tuple[str, ...]
    attention: tuple[str, ...]
    left: LeftPending | None = meta(omit="none", default=None, doc="what the next command there finishes")


@dataclass(frozen=True)
class Decided(Transition):
    """A transition after commit, accept or a promotion's decision: accepted, held for a person (still
    proposed, `extra.held` says why) or proposed."""

    worktree: WorktreeUpdate | None = meta(omit="none", default=None,
                                           doc="the target's worktree brought up to date (a promotion)")
    superseded: str | None = meta(omit="none", default=None,
                                  doc="this call's own proposal, superseded by an identical one decided first")


@dataclass(frozen=True)
class Unchanged(Record):
    """A commit that made no state: the workspace matches its lane head."""

    status: Literal["unchanged"]
    lane: str
    head: str
    message: str


@dataclass(frozen=True)
class LaneStatus(LaneInfo):
    """A lane in `status`: its unsnapshotted paths and those a promotion left needing attention."""

    dirty: tuple[str, ...] = ()
    attention: tuple[str, ...] = ()


@dataclass(frozen=True)
class DirtyWorkspace(Record):
    """A workspace holding edits no state holds: path -> change kind, and the paths needing attention."""

    lane: str
    workspace: str
    paths: dict[str, str]
    attention: tuple[str, ...]


@dataclass(frozen=True)
class RepositoryStatus(Record):
    """Every lane with its workspace, the pending proposals, and the workspaces with unsnapshotted edits."""

    trunk: str
    lanes: tuple[LaneStatus, ...]
    proposals: tuple[Transition, ...]
    dirty: tuple[DirtyWorkspace, ...]


@dataclass(frozen=True)
class LaneDetail(LaneInfo):
    """`lane show`: unsnapshotted paths (path -> change kind), paths needing attention, pending proposals, the
    last transitions with totals over all of the lane's, and whether it holds work no other lane has."""

    dirty: dict[str, str] = meta(default_factory=dict)
    attention: tuple[str, ...] = ()
    proposals: tuple[Transition, ...] = ()
    recent: tuple[Transition, ...] = ()
    totals: Totals = meta(default_factory=Totals)
    unpromoted: bool = False
