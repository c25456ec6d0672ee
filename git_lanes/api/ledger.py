"""The coordination ledger through the API: agents, tasks, tickets, file claims, dirty sets, the board,
and waiting for wake-ups. Every write is one ledger op appended under the lock with a compare-and-swap;
every read is one read of the head's tree."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, TypeVar

from git_lanes.domain.context import Context
from git_lanes.errors import UnsupportedFormat, UserError
from git_lanes.model.ids import Actor, AgentId, LedgerId

if TYPE_CHECKING:
    from types import ModuleType

    from git_lanes import ledger
    from git_lanes.domain import agents, board, claims, lanes, tasks, tickets
    from git_lanes.ledger import Fold
    from git_lanes.ledger.watch import LedgerWatch
    from git_lanes.model import ledger_results as results
    from git_lanes.model.coordination import AgentRow, ClaimRow, DirtySet, PostView, TaskDetail, TaskView, \
        TicketDetail, TicketView
    from git_lanes.model.record import Record

R = TypeVar("R", bound="Record")

DEFAULT_WAIT = 60.0
MAX_WAIT = 24 * 3600.0


# The ledger and the coordination model's fold, loaded by the first write (a face that only reads never loads
# the fold) and kept: an import in a function is thousands of instructions at every call.
_WRITING: tuple[ModuleType, Fold] | None = None


def _load_writing() -> tuple[ModuleType, Fold]:
    global _WRITING
    from git_lanes import ledger
    from git_lanes.domain.coordination import FOLD

    _WRITING = (ledger, FOLD)
    return _WRITING


class LedgerApi:
    ctx: Context

    # -- plumbing --------------------------------------------------------------------------------------
    def _state(self) -> ledger.State:
        from git_lanes import ledger

        return ledger.state_at(self.ctx.store, ledger.head(self.ctx.store))

    def _task_id(self, task: str) -> str:
        """The task an id or unique prefix names, for an op on it. A whole id is taken as it is: the op's fold
        refuses one the ledger lacks (`unknown_task`) when it applies, which a look at the state first could
        only race; so a writer reads nothing before it appends (under contention, the commits every other
        writer appended since its last op)."""
        from git_lanes.domain import tasks
        from git_lanes.model.names import id_text

        whole = id_text(task, "task").strip().lower()
        return whole if LedgerId.valid(whole) else tasks.resolve_task(self._state(), task)

    def _actor(self, actor: str | None) -> Actor:
        """An agent named by a face is an AgentId; without one, the person in git's identity acts."""
        return AgentId(actor) if actor else Actor(self.ctx.store.signature().name)

    def _append(self, op_type: str, actor: str, args: dict[str, Any]) -> dict[str, Any]:
        """Append one op under the writers' lock; its result as the ledger records it, plus `op`."""
        ledger, fold = _WRITING or _load_writing()
        op = ledger.make_op(op_type, actor, args, self.ctx.now())
        appended = ledger.append(self.ctx.store, op, fold)
        return {**(appended.op.result or {}), "op": op.id}

    def _append_as(self, result: type[R], op_type: str, actor: str, args: dict[str, Any]) -> R:
        """`_append`, its result as the record `result`."""
        return result.from_dict(self._append(op_type, actor, args))

    def ledger_log(self, limit: int = 20) -> list[results.LedgerEntry]:
        """The ledger ops among the last `limit` commits, newest first: each commit's summary line and the op it
        records. A commit holding no op this version reads (an older git-lanes cut one at a NUL) is passed
        over, as sync and `op log` pass it over, rather than failing the whole list on every machine."""
        from git_lanes import ledger
        from git_lanes.domain.wording import checked_limit
        from git_lanes.model import ledger_results as results

        head = ledger.head(self.ctx.store)
        if checked_limit(limit) == 0 or head is None:
            return []
        rows = []
        for info in self.ctx.store.walk(head, limit=limit):
            try:
                op = ledger.read_op(self.ctx.store, info.oid)
            except UnsupportedFormat:
                continue
            rows.append(results.LedgerEntry.from_dict(
                {"commit": info.oid, "summary": info.message.split("\n", 1)[0], **op.to_dict()}))
        return rows

    # -- agents ----------------------------------------------------------------------------------------
    def agent_register(self, agent: str, kind: str | None = None, lane: str | None = None) \
            -> results.AgentRegistered:
        """Register `agent` (or update its kind and lane) and start its 15-minute lease. Posts to everyone
        sent before an agent's first call do not flood in; posts directed to it do."""
        from git_lanes.domain import lanes
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        if lane is not None:
            lanes.lane_head(self.ctx, lane)
        return self._append_as(results.AgentRegistered, "agent.register", agent,
                            {"agent": agent, "kind": kind, "lane": lane})

    def agent_heartbeat(self, agent: str) -> results.Heartbeat:
        """Extend `agent`'s lease; report its unread posts, pending wakes and (once) the ops of its a sync
        refused; refresh its dirty set from git when it has a lane."""
        from git_lanes.domain import agents
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        record = self._state().get(agents.agent_path(agent)) or {}
        files = self._dirty_files(record.get("lane"), required=False)
        return self._append_as(results.Heartbeat, "agent.heartbeat", agent, {"agent": agent, "files": files})

    def agent_list(self) -> list[AgentRow]:
        """Every agent with its lease (alive or lapsed), lane, the tasks it holds, its claims and the size of
        its dirty set."""
        from git_lanes.domain import agents, claims, tasks
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import AgentRow

        state = self._state()
        now = self.ctx.now()
        set_aside: list[dict[str, str]] = []
        rows = agents.list_agents(state, now, set_aside)
        held = [t for t in tasks.list_tasks(state, now, set_aside=set_aside) if t["status"] in ("claimed", "blocked")]
        for row in rows:
            row["tasks"] = [t["id"] for t in held if t["owner"] == row["id"]]
            row["claims"] = claims.claimed_globs(state, row["id"], set_aside)
            row["dirty"] = len(claims.dirty_files(state, row["id"], set_aside))
        return Listing([AgentRow.from_dict(row) for row in rows], set_aside)

    def _dirty_files(self, lane: str | None, *, required: bool) -> list[str] | None:
        """The agent's dirty set, computed from git: its lane workspace against the lane head."""
        from git_lanes.domain import lanes

        if lane is None:
            if required:
                raise UserError("this agent has no lane, so it has no dirty set", code="no_lane",
                                hint="register it with `git lanes agent register ID --lane LANE`")
            return None
        path, _ = lanes.workspace_state(self.ctx, lane)
        if path is None:
            if required:
                lanes.require_workspace(self.ctx, lane)
            return None
        return sorted(self.ctx.store.changed_paths(path))

    # -- tasks -----------------------------------------------------------------------------------------
    def task_create(self, title: str, *, actor: str | None = None, description: str | None = None,
                    depends: tuple[str, ...] = (), ticket: str | None = None, files: tuple[str, ...] = ()) \
            -> results.TaskCreated:
        """Create a task (id = the op's id). `depends` and `ticket` take unique id prefixes; `files` are
        globs claimed for whoever claims the task. `actor` defaults to the person in git's identity."""
        from git_lanes.domain import claims, tasks, tickets
        from git_lanes.model import ledger_results as results

        state = self._state()
        args = {"title": title, "description": description or "",
                "depends": [tasks.resolve_task(state, d) for d in depends],
                "ticket": tickets.resolve_ticket(state, ticket) if ticket else None, "files": list(files)}
        tasks.validate_title(title)
        claims.validate_globs(list(files))
        return self._append_as(results.TaskCreated, "task.create", self._actor(actor), args)

    def task_dep_add(self, task: str, depends_on: str, actor: str | None = None) -> results.DependencyAdded:
        """Make `task` wait for `depends_on`; a dependency that would close a cycle is refused and named."""
        from git_lanes.domain import tasks
        from git_lanes.model import ledger_results as results

        state = self._state()
        return self._append_as(results.DependencyAdded, "task.dep_add", self._actor(actor), {
            "task": tasks.resolve_task(state, task), "depends_on": tasks.resolve_task(state, depends_on)})

    def task_list(self, *, ready: bool = False, status: str | None = None, owner: str | None = None) \
            -> list[TaskView]:
        """Tasks oldest first, as seen now (a lapsed owner's task is open); `ready`: open tasks whose
        dependencies are all done."""
        from git_lanes.domain import tasks
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import TaskView

        set_aside: list[dict[str, str]] = []
        rows = tasks.list_tasks(self._state(), self.ctx.now(), ready=ready, status=status, owner=owner,
                                set_aside=set_aside)
        return Listing([TaskView.from_dict(row) for row in rows], set_aside)

    def task_show(self, task: str) -> TaskDetail:
        """One task (by unique id prefix) with the status of each task it depends on."""
        from git_lanes.domain import tasks
        from git_lanes.model.coordination import TaskDetail

        state = self._state()
        record = tasks.view(state, tasks.get_task(state, tasks.resolve_task(state, task)), self.ctx.now())
        upstream = tasks.readable(state, record["depends"], tasks.get_task)  # one that cannot be read is left out
        record["depends_status"] = {d["id"]: d["status"] for d in upstream}
        return TaskDetail.from_dict(record)

    def task_claim(self, task: str, agent: str, version: int | None = None, lane: str | None = None) \
            -> results.TaskClaimed:
        """Claim `task` for `agent` by compare-and-swap: exactly one of several concurrent claimers wins, the
        others get a Conflict at once (`task_claimed`, or `version_conflict` when `version` is not the
        task's). The task's files become the agent's claims; overlaps are reported."""
        from git_lanes.domain import lanes, tasks
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        if lane is not None:
            lanes.lane_head(self.ctx, lane)
        task_id = self._task_id(task)
        return self._append_as(results.TaskClaimed, "task.claim", agent,
                            {"task": task_id, "agent": agent, "version": version, "lane": lane})

    def _task_op(self, result: type[R], op_type: str, task: str, actor: str | None, **args: Any) -> R:
        from git_lanes.domain import tasks

        task_id = self._task_id(task)
        return self._append_as(result, op_type, self._actor(actor), {"task": task_id, **args})

    def task_done(self, task: str, actor: str | None = None) -> results.TaskDone:
        """Mark `task` done; wake the owners of the tasks it makes ready; the ticket it completes becomes
        ready. An agent cannot finish a task another live agent holds (Conflict); a person may."""
        from git_lanes.model import ledger_results as results

        return self._task_op(results.TaskDone, "task.done", task, actor)

    def task_block(self, task: str, reason: str, actor: str | None = None) -> results.TaskStatusChanged:
        """Pause `task` saying why; its owner keeps it (a blocked task does not lapse)."""
        from git_lanes.model import ledger_results as results

        return self._task_op(results.TaskStatusChanged, "task.block", task, actor, reason=reason)

    def task_resume(self, task: str, actor: str | None = None) -> results.TaskStatusChanged:
        """Resume a blocked task: claimed again by its owner, or open."""
        from git_lanes.model import ledger_results as results

        return self._task_op(results.TaskStatusChanged, "task.resume", task, actor)

    def task_handoff(self, task: str, to: str, actor: str | None = None, note: str | None = None) \
            -> results.TaskHandedOff:
        """Hand `task` to agent `to`: owner, lane, file claims and dirty set move in one op, and `to` gets a
        handoff post (with `note`), even before it has started."""
        from git_lanes.model import ledger_results as results

        to = AgentId(to)
        return self._task_op(results.TaskHandedOff, "task.handoff", task, actor, to=to, note=note)

    # -- tickets ---------------------------------------------------------------------------------------
    def ticket_open(self, title: str, actor: str | None = None) -> results.TicketOpened:
        """Open a ticket (a group of tasks); when all its tasks are done a ticket_ready post appears."""
        from git_lanes.model import ledger_results as results

        return self._append_as(results.TicketOpened, "ticket.open", self._actor(actor), {"title": title})

    def ticket_link(self, ticket: str, task: str, actor: str | None = None) -> results.TicketLinked:
        """Make `task` part of `ticket` (leaving any ticket it was in); both take unique id prefixes."""
        from git_lanes.domain import tasks, tickets
        from git_lanes.model import ledger_results as results

        state = self._state()
        return self._append_as(results.TicketLinked, "ticket.link", self._actor(actor), {
            "ticket": tickets.resolve_ticket(state, ticket), "task": tasks.resolve_task(state, task)})

    def ticket_list(self) -> list[TicketView]:
        """Tickets oldest first, with how many of their tasks are done."""
        from git_lanes.domain import tickets
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import TicketView

        set_aside: list[dict[str, str]] = []
        return Listing([TicketView.from_dict(row) for row in tickets.list_tickets(self._state(), set_aside)],
                       set_aside)

    def ticket_show(self, ticket: str) -> TicketDetail:
        """One ticket (by unique id prefix) with its tasks."""
        from git_lanes.domain import tasks, tickets
        from git_lanes.model.coordination import TicketDetail

        state = self._state()
        record = tickets.view(state, tickets.get_ticket(state, tickets.resolve_ticket(state, ticket)))
        now = self.ctx.now()
        record["task_records"] = [tasks.view(state, tasks.get_task(state, t), now) for t in record["tasks"]]
        return TicketDetail.from_dict(record)

    # -- file claims and dirty sets --------------------------------------------------------------------
    def claim_add(self, globs: tuple[str, ...] | list[str], agent: str, task: str | None = None) \
            -> results.ClaimsAdded:
        """Claim files matching `globs` (repository-relative; `**` spans directories; a plain path claims
        everything under it) for `agent`. Claims never block: overlaps are returned and wake those agents."""
        from git_lanes.domain import claims, tasks
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        task_id = tasks.resolve_task(self._state(), task) if task else None
        return self._append_as(results.ClaimsAdded, "claim.add", agent,
                            {"agent": agent, "globs": claims.validate_globs(list(globs)), "task": task_id})

    def claim_release(self, agent: str, globs: tuple[str, ...] | list[str] = ()) -> results.ClaimsReleased:
        """Release `agent`'s claims on `globs` (all of them when none is given)."""
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        return self._append_as(results.ClaimsReleased, "claim.release", agent,
                            {"agent": agent, "globs": list(globs) or None})

    def claim_list(self, agent: str | None = None) -> list[ClaimRow]:
        """Every file claim (or only `agent`'s): the agents' own, then the exclusive claims of dispatch plans
        (`exclusive`, under the agent holding the task)."""
        from git_lanes.domain import claims, exclusive
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import ClaimRow

        state = self._state()
        set_aside: list[dict[str, str]] = []
        rows = claims.list_claims(state, set_aside) + exclusive.claim_rows(state)
        return Listing([ClaimRow.from_dict(r) for r in rows if agent is None or r["agent"] == agent], set_aside)

    def dirty_publish(self, agent: str) -> results.DirtyPublished:
        """Compute `agent`'s dirty set from git (its lane's workspace against the lane head) and publish it;
        overlaps with other agents' claims and dirty files wake them."""
        from git_lanes.domain import agents
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        record = agents.get_agent(self._state(), agent)
        files = self._dirty_files(record.get("lane"), required=True)
        return self._append_as(results.DirtyPublished, "dirty.publish", agent,
                            {"agent": agent, "lane": record.get("lane"), "files": files})

    def dirty_list(self) -> list[DirtySet]:
        """Every agent's published dirty set."""
        from git_lanes.domain import claims
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import DirtySet

        set_aside: list[dict[str, str]] = []
        return Listing([DirtySet.from_stored(row) for row in claims.list_dirty(self._state(), set_aside)], set_aside)

    # -- board -----------------------------------------------------------------------------------------
    def board_post(self, text: str, agent: str, kind: str = "note", to: str | None = None) -> results.Posted:
        """Post `text` (at most 16 KiB) on the board, to everyone else or to agent `to` only."""
        from git_lanes.domain import board
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        board.validate_text(text)
        return self._append_as(results.Posted, "board.post", agent, {"text": text, "kind": kind, "to": to})

    def board_read(self, agent: str | None = None, *, unread_only: bool = False, everything: bool = False,
                   limit: int = 20) -> results.BoardRead:
        """Posts for `agent` (all unread ones plus recent ones, or only unread), marking them read."""
        from git_lanes.domain import agents, board
        from git_lanes.model import ledger_results as results
        from git_lanes.domain.wording import checked_limit
        from git_lanes.model.record import Listing
        from git_lanes.model.coordination import PostView

        checked_limit(limit)
        state = self._state()
        set_aside: list[dict[str, str]] = []
        if agent is None:
            posts = board.recent(state, None, limit, True, set_aside)
            return results.BoardRead(None, tuple(PostView.from_dict(board.view(p)) for p in posts), 0, None,
                                     Listing((), set_aside).unreadable)
        agent = AgentId(agent)
        unread = board.unread(state, agent, set_aside)
        shown = {p["seq"]: p for p in unread}
        if not unread_only:
            shown.update({p["seq"]: p for p in board.recent(state, agent, limit, everything, set_aside)})
        unread_seqs = {p["seq"] for p in unread}
        through = None
        place = agents.reader_path(agent)  # none yet, or one that cannot be read: this read writes it
        if unread or state.get(place) is None or any(u["key"] == place for u in set_aside):
            through = max(unread_seqs, default=board.current_seq(state))
            self._append("board.read", agent, {"agent": agent, "through": through})
        posts = [board.view(p) | {"unread": p["seq"] in unread_seqs} for _, p in sorted(shown.items())]
        return results.BoardRead(agent, tuple(PostView.from_dict(p) for p in posts), len(unread), through,
                                 Listing((), set_aside).unreadable)

    def board_resolve(self, post: int, actor: str | None = None) -> results.PostResolved:
        """Mark post number `post` (a question, say) resolved; a second resolver gets a Conflict."""
        from git_lanes.model import ledger_results as results

        return self._append_as(results.PostResolved, "board.resolve", self._actor(actor), {"post": post})

    def board_answer(self, post: int, text: str, agent: str) -> results.PostAnswered:
        """Answer question #post: a post to its asker naming it, and the question resolved, in one op."""
        from git_lanes.domain import board
        from git_lanes.model import ledger_results as results

        agent = AgentId(agent)
        board.validate_text(text)
        return self._append_as(results.PostAnswered, "board.answer", agent, {"post": post, "text": text})

    # -- waiting ---------------------------------------------------------------------------------------
    def wait(self, agent: str, timeout: float = DEFAULT_WAIT, *, stop: threading.Event | None = None) \
            -> results.WaitResult:
        """Return as soon as a wake is queued for `agent` (a task of its became ready, an overlap, a refused
        op) or an unread post for it arrives — or at `timeout` seconds, or when `stop` is set (a caller that
        gave up: reason `cancelled`, nothing taken). What it returns is taken: the wakes leave the queue and
        the posts are marked read, so the next wait does not wake for them again. Watching costs a stat per
        few milliseconds and takes no lock."""
        from git_lanes.domain import agents, board
        from git_lanes.ledger.watch import LedgerWatch

        agent = AgentId(agent)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout <= MAX_WAIT:
            raise UserError(f"timeout must be between 0 and {MAX_WAIT:.0f} seconds", code="invalid_timeout")
        started = time.monotonic()
        deadline = started + timeout
        watch = LedgerWatch(self.ctx.store.common_dir)
        while True:
            if stop is not None and stop.is_set():
                return self._nothing(agent, "cancelled", started)
            state = self._state()
            wakes = agents.pending_wakes(state, agent)
            posts = board.unread(state, agent)
            if wakes or posts:
                taken = self._take(agent, wakes, posts, time.monotonic() - started)
                if taken is not None:
                    return taken
            if not watch.wait(deadline, stop):
                return self._nothing(agent, "cancelled" if stop is not None and stop.is_set() else "timeout",
                                     started)

    @staticmethod
    def _nothing(agent: str, reason: str, started: float) -> results.WaitResult:
        from git_lanes.model import ledger_results as results

        return results.WaitResult(AgentId(agent), reason, (), (), round(time.monotonic() - started, 3))

    def _take(self, agent: str, wakes: list[dict[str, Any]], posts: list[dict[str, Any]], waited: float) \
            -> results.WaitResult | None:
        """Take what was seen; None when another waiter for the same agent took all of it first."""
        from git_lanes.domain import board
        from git_lanes.model import ledger_results as results

        through = max((p["seq"] for p in posts), default=None)
        result = self._append("wake.take", agent, {"agent": agent, "wakes": [w["id"] for w in wakes],
                                                   "through": through})
        wakes = [w for w in wakes if w["id"] in set(result["taken"])]
        if not wakes and not posts:
            return None
        kinds = [w["kind"] for w in wakes]
        reason = next((k for k in ("task_ready", "needs_review", "overlap", "refused") if k in kinds), "post")
        return results.WaitResult.from_dict({"agent": agent, "reason": reason, "wakes": wakes,
                                             "posts": [board.view(p) for p in posts], "waited": round(waited, 3)})
