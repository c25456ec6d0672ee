"""What the API returns about workspaces and their snapshots (status, lane show, commit, accept), as records:
one definition for the CLI's `--json`, the MCP tool results and output schemas, the SDK's types and the HTTP
OpenAPI document."""

from __future__ import annotations

from typing import Literal

from git_lanes.model.record import Record, key, meta
from git_lanes.model.records import Transition
from git_lanes.model.record import Unreadable
from git_lanes.model.results import LaneInfo, Totals


class LeftPending(Record):
    """Paths a promotion still has to write in a worktree whose lane moved meanwhile: the next command run
    there finishes them."""

    reason: str
    paths: tuple[str, ...]


class WorktreeUpdate(Record):
    """What accepting a promotion did to the target's checked-out worktree: the paths it wrote, and those it
    left for attention because they hold unsaved edits (never clobbered)."""

    path: str
    updated: tuple[str, ...]
    attention: tuple[str, ...]
    left: LeftPending | None = meta(omit="none", default=None, doc="what the next command there finishes")


class Decided(Transition):
    """A transition after commit, accept or a promotion's decision: accepted, held for a person (still
    proposed, `extra.held` says why) or proposed."""

    worktree: WorktreeUpdate | None = meta(omit="none", default=None,
                                           doc="the target's worktree brought up to date (a promotion)")
    superseded: str | None = meta(omit="none", default=None,
                                  doc="this call's own proposal, superseded by an identical one decided first")


class Unchanged(Record):
    """A commit that made no state: the workspace matches its lane head."""

    status: Literal["unchanged"]
    lane: str
    head: str
    message: str


class LaneStatus(LaneInfo):
    """A lane in `status`: its unsnapshotted paths and those a promotion left needing attention."""

    dirty: tuple[str, ...] = ()
    attention: tuple[str, ...] = ()


class DirtyWorkspace(Record):
    """A workspace holding edits no state holds: path -> change kind, and the paths needing attention."""

    lane: str
    workspace: str
    paths: dict[str, str]
    attention: tuple[str, ...]


class InterruptedUndo(Record):
    """An undo whose process was killed before it finished (its refs may have moved and its workspaces not
    followed, or nothing moved yet): the next `undo` finishes it."""

    undo: str | None
    undoes: str | None
    message: str
    hint: str
    started: bool = meta(default=True, doc="false when it moved nothing before it stopped: the next `undo` "
                                           "undoes `undoes`, as was asked")


class RepositoryStatus(Record):
    """Every lane with its workspace, the pending proposals, and the workspaces with unsnapshotted edits."""

    trunk: str
    lanes: tuple[LaneStatus, ...]
    proposals: tuple[Transition, ...]
    dirty: tuple[DirtyWorkspace, ...]
    unreadable: tuple[Unreadable, ...] = meta(omit="empty", default=(),
                                              doc="pending proposals whose notes could not be read")
    interrupted_undos: tuple[InterruptedUndo, ...] = meta(omit="empty", default=(),
                                                          doc="undos cut short, which the next `undo` finishes")


class LaneDetail(LaneInfo):
    """`lane show`: unsnapshotted paths (path -> change kind), paths needing attention, pending proposals, the
    last transitions with totals over all of the lane's, and whether it holds work no other lane has."""

    dirty: dict[str, str] = meta(default_factory=dict)
    attention: tuple[str, ...] = ()
    proposals: tuple[Transition, ...] = ()
    recent: tuple[Transition, ...] = ()
    totals: Totals = meta(default_factory=Totals)
    unpromoted: bool = False
    unreadable: tuple[Unreadable, ...] = meta(omit="empty", default=(),
                                              doc="notes that could not be read, left out of the totals")


class LaneDeleted(Record):
    """A deleted lane: its last head, kept at `kept_at` (refs/lanes/deleted/; a backup ref for a name `lane
    create` refuses, which an older sync took or plain git wrote, and no sync sends), unsaved edits kept in `backup`
    (with force), its pending proposals rejected and kept, and the ports it held given back."""

    lane: str
    head: str
    kept_at: str
    backup: str | None
    rejected_proposals: tuple[str, ...]
    released_ports: tuple[int, ...] = meta(omit="empty", default=())


class Restored(Record):
    """A workspace whose files now equal `state` while its lane stays at `lane_head`: the next commit records
    the return. `backup`: the unsaved edits a forced restore kept; `nested_left`: nested repositories left in
    place; `ignored_removed`: ignored files and folders in the way of what the state holds, deleted as git
    deletes them."""

    lane: str
    workspace: str
    state: str
    lane_head: str
    backup: str | None
    nested_left: tuple[str, ...]
    ignored_removed: tuple[str, ...]
    changed_from_head: tuple[str, ...]


class LaneReset(Record):
    """A lane moved from `from` to `to` (the head of `onto`), its workspace with it. Work the lane held that
    `onto` lacks is kept as a rejected transition (`transition`, at `kept_at`); unsaved edits in `backup`;
    proposals made on the old head rejected."""

    lane: str
    onto: str
    old: str = key("from")
    new: str = key("to")
    workspace: str | None = None
    kept_at: str | None = None
    transition: Transition | None = None
    backup: str | None = None
    rejected_proposals: tuple[str, ...] = ()
    nested_left: tuple[str, ...] = ()
