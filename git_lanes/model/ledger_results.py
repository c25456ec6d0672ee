"""What the coordination API returns: one record per result, each the op's result as the ledger records it,
plus `op`, the id of the op that made it (absent for reads). A face renders `to_dict()`; the MCP tool
schemas, the SDK's types and the OpenAPI document come from `json_schema()`."""

from __future__ import annotations

from typing import Any, Literal

from git_lanes.model.coordination import Overlap, PostKind, PostView, Seq, TaskStatus, Time, Wake
from git_lanes.model.ids import Actor, AgentId, LaneName, LedgerId
from git_lanes.model.record import Record, Unreadable, key, meta


def _op() -> Any:
    return meta(omit="none", default=None, doc="the ledger op that made this change")


class AgentRegistered(Record):
    agent: AgentId
    registered: bool
    kind: str | None
    lane: LaneName | None
    lease_until: Time
    op: LedgerId | None = _op()


class DirtyPublished(Record):
    """An agent's dirty set as published: overlaps with others' claims and dirty files (those agents are
    woken), and the files outside its own claims."""

    agent: AgentId
    lane: LaneName | None
    files: tuple[str, ...]
    truncated: bool
    overlaps: tuple[Overlap, ...]
    unclaimed: tuple[str, ...]
    op: LedgerId | None = _op()


class Heartbeat(Record):
    """An agent's lease extended; what waits for it (unread posts, wakes), the notices of its ops a sync
    refused (delivered once), and its dirty set when it has a lane."""

    agent: AgentId
    lease_until: Time
    unread: int
    wakes: tuple[Wake, ...]
    refused: tuple[Wake, ...]
    dirty: DirtyPublished | None
    registered: bool = meta(omit="empty", default=False,
                            doc="true when this call registered the agent: no agent had that name before")
    op: LedgerId | None = _op()


class TaskCreated(Record):
    task: LedgerId
    version: int
    ready: bool
    ticket: LedgerId | None
    op: LedgerId | None = _op()


class DependencyAdded(Record):
    task: LedgerId
    depends_on: LedgerId
    added: bool
    version: int
    op: LedgerId | None = _op()


class TaskClaimed(Record):
    """A claim that held: `already` when the agent held the task before (then no `previous_owner`)."""

    task: LedgerId
    owner: AgentId
    version: int
    already: bool
    ready: bool
    overlaps: tuple[Overlap, ...]
    previous_owner: AgentId | None = None
    op: LedgerId | None = _op()

    def to_dict(self) -> dict[str, Any]:
        record = super().to_dict()
        if self.already:
            record.pop("previous_owner")
        return record


class Woken(Record):
    agent: AgentId
    task: LedgerId


class TaskDone(Record):
    """A task finished: the tasks it made ready, the owners woken for them, and its ticket if that became
    ready."""

    task: LedgerId
    version: int
    now_ready: tuple[LedgerId, ...]
    woken: tuple[Woken, ...]
    ticket_ready: LedgerId | None
    exclusive_released: tuple[LedgerId, ...] = meta(
        omit="empty", default=(), doc="tasks whose exclusive claims ended: their dispatch plan is all done")
    lanes_created: tuple[dict[str, Any], ...] = meta(
        omit="empty", default=(), doc="the lanes of the plan's tasks this made ready, created from its head")
    op: LedgerId | None = _op()
    integrated: dict[str, Any] | None = meta(omit="none", default=None,
                                             doc="where its lane was integrated first (task done without "
                                                 "--no-integrate): into, lane, status, transition, state, and "
                                                 "`unsnapshotted`, the lane's workspace edits no state holds, "
                                                 "left out (null when none)")
    ticket_unpublishable: dict[str, Any] | None = meta(
        omit="none", default=None, doc="the ticket that became ready has nothing to publish (none of its tasks "
                                       "integrated a change): publish's refusal, as code, message and hint")


class TaskStatusChanged(Record):
    """A task blocked or resumed."""

    task: LedgerId
    status: TaskStatus
    owner: AgentId | None
    version: int
    op: LedgerId | None = _op()


class Moved(Record):
    claims: tuple[str, ...]
    dirty: tuple[str, ...]
    lane: LaneName | None


class TaskHandedOff(Record):
    task: LedgerId
    from_: AgentId | None = key("from")
    to: AgentId = key("to")
    version: int = key("version")
    moved: Moved = key("moved")
    post: Seq | None = key("post")
    op: LedgerId | None = _op()


class TicketOpened(Record):
    ticket: LedgerId
    op: LedgerId | None = _op()


class TicketLinked(Record):
    ticket: LedgerId
    task: LedgerId
    previous: LedgerId | None
    linked: bool
    ready: tuple[LedgerId, ...] = meta(omit="empty", default=(),
                                       doc="the tickets the link made ready (every task of theirs done)")
    reopened: tuple[LedgerId, ...] = meta(omit="empty", default=(),
                                          doc="the ready or published tickets the link opened again (a task not "
                                              "done joined)")
    op: LedgerId | None = _op()


class ClaimsAdded(Record):
    """The agent's claims after adding; overlaps with other agents' claims and dirty files (they are woken)."""

    agent: AgentId
    claims: tuple[str, ...]
    added: tuple[str, ...]
    overlaps: tuple[Overlap, ...]
    op: LedgerId | None = _op()


class ClaimsReleased(Record):
    agent: AgentId
    released: tuple[str, ...]
    claims: tuple[str, ...]
    op: LedgerId | None = _op()


class Posted(Record):
    """A post on the board. `to_known` (directed posts only) says whether the recipient has started yet."""

    post: Seq
    kind: PostKind
    to: AgentId | None
    to_known: bool | None = meta(omit="none", default=None)
    op: LedgerId | None = _op()


class PostResolved(Record):
    post: Seq
    resolved_by: Actor
    op: LedgerId | None = _op()


class PostAnswered(Record):
    """An answer posted to the asker and the question resolved, in one op."""

    post: Seq
    answers: Seq
    to: AgentId | None
    resolved_by: Actor
    op: LedgerId | None = _op()


class BoardRead(Record):
    """Posts shown to `agent` (unread ones plus recent ones); those unread are now marked read through
    `marked_through`. Without an agent: the board's recent posts, nothing marked."""

    agent: AgentId | None
    posts: tuple[PostView, ...]
    unread: int
    marked_through: int | None
    unreadable: tuple[Unreadable, ...] = meta(omit="empty", default=(),
                                              doc="board records that could not be read, left out")


class WaitResult(Record):
    """Why `wait` returned (`task_ready`, `overlap`, `refused`, `post`, `timeout`, ...), with what it took."""

    agent: AgentId
    reason: str
    wakes: tuple[Wake, ...]
    posts: tuple[PostView, ...]
    waited: float


class LedgerEntry(Record):
    """One ledger commit: its one-line summary and the op it records."""

    commit: str
    summary: str
    format: int
    id: LedgerId
    type: str
    actor: Actor
    time: Time
    args: dict[str, Any]
    result: dict[str, Any] | None


class Refusal(Record):
    """How an op that no longer held was recorded by a sync."""

    notified: AgentId | None
    original: LedgerId | None = meta(omit="none", default=None)


ReasonKind = Literal["task_ready", "needs_review", "overlap", "refused", "post", "timeout", "stopped"]
