"""The coordination state the ledger holds (DESIGN.md §2), one record per concept: tasks, tickets, agents,
file claims, dirty sets, board posts and read positions, wake queues. Each is what one blob of the ledger's
tree holds (its `format` key is the ledger's business), validated when built, so one bad value from a face or
a peer is refused by name rather than carried along."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from git_lanes.model.field_types import Range, Text
from git_lanes.model.ids import Actor, AgentId, LaneName, LedgerId
from git_lanes.model.record import Record, key, meta

MAX_TITLE = 200
MAX_DESCRIPTION = 20_000
MAX_REASON = 2000
MAX_NOTE = 2000
MAX_POST_BYTES = 16 * 1024
MAX_DEPENDS = 100
MAX_GLOBS = 200
MAX_SEQ = 10**8 - 1

Title = Annotated[str, Text(code="invalid_title", what="the title", max_chars=MAX_TITLE, nonblank=True,
                            blank_code="empty_title")]
Description = Annotated[str, Text(code="invalid_description", what="the description", multiline=True,
                                  max_chars=MAX_DESCRIPTION)]
Reason = Annotated[str, Text(code="invalid_reason", what="the reason", max_chars=MAX_REASON, nonblank=True,
                             blank_code="empty_reason")]
Note = Annotated[str, Text(code="invalid_note", what="the note", multiline=True, max_chars=MAX_NOTE)]
PostText = Annotated[str, Text(code="invalid_text", what="the post's text", multiline=True,
                               max_bytes=MAX_POST_BYTES, nonblank=True, blank_code="empty_post")]
Seq = Annotated[int, Range(1, MAX_SEQ)]
# A moment, in seconds since the epoch, up to the last one a calendar shows (year 9999): a peer's record
# holding 1e308 or -1 is malformed, set aside like any wrong shape, not a time that fails whoever renders it.
MAX_TIME = 253_402_300_799.0
Time = Annotated[float, Range(0, MAX_TIME)]
TaskStatus = Literal["open", "claimed", "blocked", "needs_review", "done"]
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)
TicketStatus = Literal["open", "ready", "published", "closed"]
PostKind = Literal["note", "question", "handoff", "ticket_ready", "pr_opened", "pr_updated", "branch_published",
                   "pr_merged", "branch_merged"]


class Task(Record):
    """A unit of work: its dependencies, who holds it, and a version every change bumps (claims compare
    against it)."""

    id: LedgerId
    title: Title
    created: Time
    created_by: Actor
    updated: Time
    description: Description = ""
    depends: tuple[LedgerId, ...] = ()
    dependents: tuple[LedgerId, ...] = ()
    ticket: LedgerId | None = None
    files: tuple[str, ...] = ()
    status: TaskStatus = "open"
    owner: AgentId | None = None
    lane: LaneName | None = None
    version: Annotated[int, Range(1, None)] = 1
    blocked_reason: str | None = None
    done_at: Time | None = None
    integrated: dict[str, Any] | None = meta(omit="none", default=None,
                                             doc="where `task done` integrated its lane (into, transition, state)")
    review: dict[str, Any] | None = meta(omit="none", default=None,
                                         doc="why integration sent it back (into, reason, paths, gates, lane_head)")
    plan: LedgerId | None = meta(omit="none", default=None, doc="the dispatch plan that made this task")
    exclusive: bool | None = meta(omit="none", default=None,
                                  doc="its files are claimed exclusively (a dispatch plan's task)")


class TaskView(Task):
    """A task as a reader sees it now: `status` is `open` again once its owner's lease lapsed (`lapsed`),
    `stored_status` is what the ledger holds, and `ready` says every dependency is done."""

    stored_status: TaskStatus = "open"
    lapsed: bool = False
    ready: bool = False


class TaskDetail(TaskView):
    """`task show`: a task with the status of each task it depends on."""

    depends_status: dict[str, TaskStatus] = meta(default_factory=dict)


class Ticket(Record):
    """A group of tasks; `ready` once all of them are done."""

    id: LedgerId
    title: Title
    created: Time
    created_by: Actor
    tasks: tuple[LedgerId, ...] = ()
    status: TicketStatus = "open"
    ready_at: Time | None = None
    publication: dict[str, Any] | None = meta(omit="none", default=None,
                                              doc="its pull request: remote, branch, base, head, url, merged_by")
    closed_at: Time | None = meta(omit="none", default=None)


class TicketView(Ticket):
    done: int = 0
    total: int = 0


class TicketDetail(TicketView):
    task_records: tuple[TaskView, ...] = ()


class Agent(Record):
    """A registered agent and its lease: a task whose owner's lease lapsed is open again."""

    id: AgentId
    registered: Time
    last_seen: Time
    lease_until: Time
    kind: str | None = "agent"
    lane: LaneName | None = None


class AgentView(Record):
    id: AgentId
    kind: str | None
    lane: LaneName | None
    registered: Time | None
    last_seen: Time | None
    lease_until: Time | None
    alive: bool


class AgentRow(AgentView):
    """`agent list`: an agent with the tasks it holds, its claims and the size of its dirty set."""

    tasks: tuple[LedgerId, ...] = ()
    claims: tuple[str, ...] = ()
    dirty: int = 0


class Claim(Record):
    glob: str
    time: Time
    task: LedgerId | None = None


class ClaimSet(Record):
    """An agent's file claims (globs); they warn about overlaps and never block."""

    agent: AgentId
    globs: tuple[Claim, ...] = ()


class ExclusiveClaim(Record):
    """A dispatch plan task's exclusive claim (`exclusive/<task>.json`): the globs it owns, to be changed only
    from its lane (domain/exclusive.py)."""

    task: LedgerId
    globs: tuple[str, ...] = ()
    lane: str | None = None
    title: str | None = None
    plan: str | None = None


class ClaimRow(Record):
    """One claim, as `claim list` shows it: an agent's own, or (`exclusive`) a dispatch plan task's, under the
    agent holding the task now (none before one takes it), enforced rather than warned about."""

    agent: AgentId | None
    glob: str
    time: Time
    task: LedgerId | None = None
    exclusive: bool = False
    lane: LaneName | None = meta(omit="none", default=None, doc="exclusive: the only lane that may change it")


class DirtySet(Record):
    """The files an agent changed in its lane's workspace, computed from git."""

    agent: AgentId
    files: tuple[str, ...]
    time: Time
    lane: LaneName | None = None
    truncated: bool = False


class Resolution(Record):
    by: Actor
    time: Time
    answer: Seq | None = meta(omit="none", default=None, doc="the post that answered the question")


class Post(Record):
    """A board post; its sequence number is its id. `broadcasts` counts the posts to everyone up to it, so
    counting unread posts costs O(1)."""

    seq: Seq
    id: LedgerId
    from_: Actor = key("from")
    to: AgentId | None = None
    kind: PostKind = "note"
    text: str = ""
    time: Time = 0.0
    resolved: Resolution | None = None
    broadcasts: int = 0
    reply_to: Seq | None = meta(omit="none", default=None, doc="the question this post answers")
    indexed: bool | None = meta(omit="none", default=None,
                                doc="written by a git-lanes that keeps the open questions' index (OpenQuestions) "
                                    "in step, so no post before it is missing from the index")


class PostView(Record):
    """A post as a reader sees it (`unread` only in `board read`)."""

    seq: Seq
    id: LedgerId
    from_: Actor = key("from")
    to: AgentId | None = None
    kind: PostKind = "note"
    text: str = ""
    time: Time = 0.0
    resolved: Resolution | None = None
    reply_to: Seq | None = meta(omit="none", default=None)
    unread: bool | None = meta(omit="none", default=None)


class ReadPosition(Record):
    """An agent's place on the board: its read cursor, directed posts not yet read, and its own broadcasts
    since the cursor (never unread for it): the last few listed in `own`, the ones before them counted in
    `own_before`, a count taken when the cursor was at `own_at`."""

    agent: AgentId
    cursor: int | None = None
    inbox: tuple[int, ...] = ()
    own: tuple[int, ...] = ()
    own_before: int | None = meta(omit="none", default=None)
    own_at: int | None = meta(omit="none", default=None)


class RetractedPost(Record):
    """A post an undo retracted that counted for someone: a post to everyone of a kind that wakes, or one
    directed to `to`."""

    seq: Seq
    from_: Actor = key("from")
    to: AgentId | None = None


class RetractedPosts(Record):
    """The retracted posts that still lie in some reader's count (`retracted/board.json`), in board order: a
    post's running count of broadcasts is written once, so an undo cannot take the post out of it; every
    unread count leaves these out instead."""

    posts: tuple[RetractedPost, ...] = ()


class OpenQuestions(Record):
    """The questions on the board nobody answered or resolved yet (`questions/open.json`), by number: the
    dashboard and `board read --unanswered` show every one of them however far back it lies, reading this
    record and their posts, never the board. A post that does not carry `indexed` (an older git-lanes wrote
    it) may be missing from it: readers look through those posts after the last one that carries it."""

    posts: tuple[Seq, ...] = ()


class Overlap(Record):
    """Where two agents' work may meet: one side's `glob` or `file` against the other's `claim` or dirty
    file (`dirty`). `agent` is the other agent."""

    agent: AgentId | None = meta(omit="none", default=None)
    glob: str | None = meta(omit="none", default=None)
    file: str | None = meta(omit="none", default=None)
    claim: str | None = meta(omit="none", default=None)
    dirty: bool | None = meta(omit="none", default=None)


class Wake(Record):
    """Something that concerns an agent, queued until `wait` takes it: `task_ready` (`task`, `title`),
    `overlap` (`agent`, `overlaps`) or `refused` (`original`, `error`, `message`)."""

    id: str
    kind: Literal["task_ready", "needs_review", "overlap", "refused"]
    time: Time
    op: LedgerId
    by: Actor
    task: LedgerId | None = meta(omit="none", default=None)
    title: str | None = meta(omit="none", default=None)
    lane: LaneName | None = meta(omit="none", default=None, doc="task_ready: the lane the task is worked in")
    agent: AgentId | None = meta(omit="none", default=None)
    overlaps: tuple[Overlap, ...] | None = meta(omit="none", default=None)
    original: dict[str, Any] | None = meta(omit="none", default=None)
    error: str | None = meta(omit="none", default=None)
    message: str | None = meta(omit="none", default=None)
    into: LaneName | None = meta(omit="none", default=None)
    reason: str | None = meta(omit="none", default=None)
    paths: tuple[str, ...] | None = meta(omit="none", default=None)
    post: int | None = meta(omit="none", default=None)


class WakeQueue(Record):
    agent: AgentId
    wakes: tuple[Wake, ...] = ()
