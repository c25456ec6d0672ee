"""What the worktree API returns (an agent's own lane and workspace: assign, list, release, reclaim), as
records: one definition for the MCP tools' results and output schemas, the SDK and the CLI's `--json`."""

from __future__ import annotations

from typing import Any

from git_lanes.model.coordination import Time
from git_lanes.model.ids import AgentId, LedgerId
from git_lanes.model.record import Record, meta
from git_lanes.model.results import LaneInfo


class WorktreeAssigned(Record):
    """An agent's lane and workspace: whether the lane (`created`) or only its workspace here
    (`workspace_created`) was made, the lane it held before, its lease, and what the trunk's `[setup]` did
    for a new workspace."""

    agent: AgentId
    lane: str
    workspace: str
    head: str
    created: bool
    workspace_created: bool
    previous_lane: str | None
    lease_until: Time
    op: LedgerId | None = meta(omit="none", default=None, doc="the ledger op that made this change")
    setup: dict[str, Any] | None = meta(omit="none", default=None, doc="what the trunk's [setup] did")


class AssignedAgent(Record):
    id: AgentId
    alive: bool


class WorktreeRow(LaneInfo):
    """A lane with a workspace here, and the agents assigned to it (alive: their lease holds)."""

    agents: tuple[AssignedAgent, ...] = ()


class WorktreeReleased(Record):
    """An agent's lane given back; `workspace_removed` is the workspace removed (None: kept)."""

    agent: AgentId
    lane: str
    workspace_removed: str | None
    op: LedgerId | None = meta(omit="none", default=None, doc="the ledger op that made this change")


class ReclaimedLane(Record):
    agent: str
    lane: str
    workspace: str | None


class KeptWorkspace(Record):
    """An orphan's workspace left in place, and why (`dirty_workspace`, `nested_repository`, or the code of
    the error that stopped its release, with its message)."""

    agent: str
    lane: str
    reason: str
    workspace: str | None = meta(omit="none", default=None)
    message: str | None = meta(omit="none", default=None)


class OrphansReclaimed(Record):
    """The lanes of agents whose lease lapsed, released with their workspaces removed (with `dry_run`, what
    would be), and the workspaces kept."""

    dry_run: bool
    reclaimed: tuple[ReclaimedLane, ...]
    kept: tuple[KeptWorkspace, ...]
