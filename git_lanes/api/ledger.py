"""The coordination ledger through the API: agents, tasks, tickets, file claims, dirty sets, the board,
and waiting for wake-ups. Every write is one ledger op appended under the lock with a compare-and-swap;
every read is one read of the head's tree."""

from __future__ import annotations

import threading
import time
from typing import Any

from git_lanes import ledger
from git_lanes.domain import agents, board, claims, lanes, tasks, tickets
from git_lanes.domain.context import Context
from git_lanes.domain.coordination import FOLD
from git_lanes.errors import UserError
from git_lanes.ledger.watch import LedgerWatch

DEFAULT_WAIT = 60.0
MAX_WAIT = 24 * 3600.0


class LedgerApi:
    ctx: Context

    # -- plumbing --------------------------------------------------------------------------------------
    def _state(self) -> ledger.State:
        return ledger.state_at(self.ctx.store, ledger.head(self.ctx.store))

    def _actor(self, actor: str | None) -> str:
        return ledger.op.validate_actor(actor or self.ctx.store.signature().name)

    def _append(self, op_type: str, actor: str, args: dict[str, Any]) -> dict:
        op = ledger.make_op(op_type, actor, args, self.ctx.now())
        appended = ledger.append(self.ctx.store, op, FOLD)
        return {**(appended.op.result or {}), "op": op.id}

    def ledger_log(self, limit: int = 20) -> list[dict]:
        head = ledger.head(self.ctx.store)
        if head is None:
            return []
        rows = []
        for info in self.ctx.store.walk(head, limit=limit):
            op = ledger.read_op(self.ctx.store, info.oid)
            rows.append({"commit": info.oid, "summary": info.message.split("\n", 1)[0], **op.to_dict()})
        return rows

    # -- agents ----------------------------------------------------------------------------------------
    def agent_register(self, agent: str, kind: str | None = None, lane: str | None = None) -> dict:
        agents.validate_agent_id(agent)
        if lane is not None:
            lanes.lane_head(self.ctx, lane)
        return self._append("agent.register", agent, {"agent": agent, "kind": kind, "lane": lane})

    def agent_heartbeat(self, agent: str) -> dict:
        agents.validate_agent_id(agent)
        record = self._state().get(agents.agent_path(agent)) or {}
        files = self._dirty_files(record.get("lane"), required=False)
        return self._append("agent.heartbeat", agent, {"agent": agent, "files": files})

    def agent_list(self) -> list[dict]:
        state = self._state()
        now = self.ctx.now()
        rows = agents.list_agents(state, now)
        held = [t for t in tasks.list_tasks(state, now) if t["status"] in ("claimed", "blocked")]
        for row in rows:
            row["tasks"] = [t["id"] for t in held if t["owner"] == row["id"]]
            row["claims"] = claims.claimed_globs(state, row["id"])
            row["dirty"] = len(claims.dirty_files(state, row["id"]))
        return rows

    def _dirty_files(self, lane: str | None, *, required: bool) -> list[str] | None:
        """The agent's dirty set, computed from git: its lane workspace against the lane head."""
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
                    depends: tuple[str, ...] = (), ticket: str | None = None, files: tuple[str, ...] = ()) -> dict:
        state = self._state()
        args = {"title": title, "description": description or "",
                "depends": [tasks.resolve_task(state, d) for d in depends],
                "ticket": tickets.resolve_ticket(state, ticket) if ticket else None, "files": list(files)}
        tasks.validate_title(title)
        claims.validate_globs(list(files))
        return self._append("task.create", self._actor(actor), args)

    def task_dep_add(self, task: str, depends_on: str, actor: str | None = None) -> dict:
        state = self._state()
        return self._append("task.dep_add", self._actor(actor), {
            "task": tasks.resolve_task(state, task), "depends_on": tasks.resolve_task(state, depends_on)})

    def task_list(self, *, ready: bool = False, status: str | None = None, owner: str | None = None) -> list[dict]:
        return tasks.list_tasks(self._state(), self.ctx.now(), ready=ready, status=status, owner=owner)

    def task_show(self, task: str) -> dict:
        state = self._state()
        record = tasks.view(state, tasks.get_task(state, tasks.resolve_task(state, task)), self.ctx.now())
        record["depends_status"] = {d: tasks.get_task(state, d)["status"] for d in record["depends"]}
        return record

    def task_claim(self, task: str, agent: str, version: int | None = None, lane: str | None = None) -> dict:
        agents.validate_agent_id(agent)
        if lane is not None:
            lanes.lane_head(self.ctx, lane)
        task_id = tasks.resolve_task(self._state(), task)
        return self._append("task.claim", agent, {"task": task_id, "agent": agent, "version": version,
                                                  "lane": lane})

    def _task_op(self, op_type: str, task: str, actor: str | None, **args: Any) -> dict:
        task_id = tasks.resolve_task(self._state(), task)
        return self._append(op_type, self._actor(actor), {"task": task_id, **args})

    def task_done(self, task: str, actor: str | None = None) -> dict:
        return self._task_op("task.done", task, actor)

    def task_block(self, task: str, reason: str, actor: str | None = None) -> dict:
        return self._task_op("task.block", task, actor, reason=reason)

    def task_resume(self, task: str, actor: str | None = None) -> dict:
        return self._task_op("task.resume", task, actor)

    def task_handoff(self, task: str, to: str, actor: str | None = None, note: str | None = None) -> dict:
        agents.validate_agent_id(to)
        return self._task_op("task.handoff", task, actor, to=to, note=note)

    # -- tickets ---------------------------------------------------------------------------------------
    def ticket_open(self, title: str, actor: str | None = None) -> dict:
        return self._append("ticket.open", self._actor(actor), {"title": title})

    def ticket_link(self, ticket: str, task: str, actor: str | None = None) -> dict:
        state = self._state()
        return self._append("ticket.link", self._actor(actor), {
            "ticket": tickets.resolve_ticket(state, ticket), "task": tasks.resolve_task(state, task)})

    def ticket_list(self) -> list[dict]:
        return tickets.list_tickets(self._state())

    def ticket_show(self, ticket: str) -> dict:
        state = self._state()
        record = tickets.view(state, tickets.get_ticket(state, tickets.resolve_ticket(state, ticket)))
        now = self.ctx.now()
        record["task_records"] = [tasks.view(state, tasks.get_task(state, t), now) for t in record["tasks"]]
        return record

    # -- file claims and dirty sets --------------------------------------------------------------------
    def claim_add(self, globs: tuple[str, ...] | list[str], agent: str, task: str | None = None) -> dict:
        agents.validate_agent_id(agent)
        task_id = tasks.resolve_task(self._state(), task) if task else None
        return self._append("claim.add", agent, {"agent": agent, "globs": claims.validate_globs(list(globs)),
                                                 "task": task_id})

    def claim_release(self, agent: str, globs: tuple[str, ...] | list[str] = ()) -> dict:
        agents.validate_agent_id(agent)
        return self._append("claim.release", agent, {"agent": agent, "globs": list(globs) or None})

    def claim_list(self, agent: str | None = None) -> list[dict]:
        rows = claims.list_claims(self._state())
        return [r for r in rows if agent is None or r["agent"] == agent]

    def dirty_publish(self, agent: str) -> dict:
        agents.validate_agent_id(agent)
        record = agents.get_agent(self._state(), agent)
        files = self._dirty_files(record.get("lane"), required=True)
        return self._append("dirty.publish", agent, {"agent": agent, "lane": record.get("lane"), "files": files})

    def dirty_list(self) -> list[dict]:
        return claims.list_dirty(self._state())

    # -- board -----------------------------------------------------------------------------------------
    def board_post(self, text: str, agent: str, kind: str = "note", to: str | None = None) -> dict:
        agents.validate_agent_id(agent)
        board.validate_text(text)
        return self._append("board.post", agent, {"text": text, "kind": kind, "to": to})

    def board_read(self, agent: str | None = None, *, unread_only: bool = False, everything: bool = False,
                   limit: int = 20) -> dict:
        """Posts for `agent` (all unread ones plus recent ones, or only unread), marking them read."""
        state = self._state()
        if agent is None:
            posts = board.recent(state, None, limit, True)
            return {"agent": None, "posts": [board.view(p) for p in posts], "unread": 0, "marked_through": None}
        agents.validate_agent_id(agent)
        unread = board.unread(state, agent)
        shown = {p["seq"]: p for p in unread}
        if not unread_only:
            shown.update({p["seq"]: p for p in board.recent(state, agent, limit, everything)})
        unread_seqs = {p["seq"] for p in unread}
        through = None
        if unread or state.get(agents.reader_path(agent)) is None:
            through = max(unread_seqs, default=board.current_seq(state))
            self._append("board.read", agent, {"agent": agent, "through": through})
        posts = [board.view(p) | {"unread": p["seq"] in unread_seqs} for _, p in sorted(shown.items())]
        return {"agent": agent, "posts": posts, "unread": len(unread), "marked_through": through}

    def board_resolve(self, post: int, actor: str | None = None) -> dict:
        return self._append("board.resolve", self._actor(actor), {"post": post})

    def board_answer(self, post: int, text: str, agent: str) -> dict:
        """Answer question #post: a post to its asker naming it, and the question resolved, in one op."""
        agents.validate_agent_id(agent)
        board.validate_text(text)
        return self._append("board.answer", agent, {"post": post, "text": text})

    # -- waiting ---------------------------------------------------------------------------------------
    def wait(self, agent: str, timeout: float = DEFAULT_WAIT, *, stop: threading.Event | None = None) -> dict:
        """Return as soon as a wake is queued for `agent` (a task of its became ready, an overlap, a refused
        op) or an unread post for it arrives — or at `timeout` seconds, or when `stop` is set (a caller that
        gave up: reason `cancelled`, nothing taken). What it returns is taken: the wakes leave the queue and
        the posts are marked read, so the next wait does not wake for them again. Watching costs a stat per
        few milliseconds and takes no lock."""
        agents.validate_agent_id(agent)
        if not 0 <= timeout <= MAX_WAIT:
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
    def _nothing(agent: str, reason: str, started: float) -> dict:
        return {"agent": agent, "reason": reason, "wakes": [], "posts": [],
                "waited": round(time.monotonic() - started, 3)}

    def _take(self, agent: str, wakes: list[dict], posts: list[dict], waited: float) -> dict | None:
        """Take what was seen; None when another waiter for the same agent took all of it first."""
        through = max((p["seq"] for p in posts), default=None)
        result = self._append("wake.take", agent, {"agent": agent, "wakes": [w["id"] for w in wakes],
                                                   "through": through})
        wakes = [w for w in wakes if w["id"] in set(result["taken"])]
        if not wakes and not posts:
            return None
        kinds = [w["kind"] for w in wakes]
        reason = next((k for k in ("task_ready", "overlap", "refused") if k in kinds), "post")
        return {"agent": agent, "reason": reason, "wakes": wakes, "posts": [board.view(p) for p in posts],
                "waited": round(waited, 3)}
