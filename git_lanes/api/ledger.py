"""The coordination ledger through the API, and what every other ledger mixin builds on: reading the head's
state, appending an op under the lock with a compare-and-swap, the log of ops, and the agents with their file
claims and dirty sets. Tasks and tickets are `tasks.py`, the board and waiting for wake-ups `board.py`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import UnsupportedFormat, UserError, command, notice
from git_lanes.model.ids import Actor, AgentId

if TYPE_CHECKING:
    from types import ModuleType

    from git_lanes import ledger
    from git_lanes.ledger import Fold
    from git_lanes.model import ledger_results as results
    from git_lanes.model.coordination import AgentRow, ClaimRow, DirtySet
    from git_lanes.model.record import Record

R = TypeVar("R", bound="Record")


# The ledger and the coordination model's fold, loaded by the first write (a face that only reads never loads
# the fold) and kept: an import in a function is thousands of instructions at every call.
_WRITING: tuple[ModuleType, Fold] | None = None


def _load_writing() -> tuple[ModuleType, Fold]:
    global _WRITING
    from git_lanes import ledger
    from git_lanes.domain.coordination import FOLD

    _WRITING = (ledger, FOLD)
    return _WRITING


@held
class LedgerApi:
    """Mixed into `Lanes`; TasksApi and BoardApi build on it, and the other ledger-writing mixins name what
    they use of it (`_state`, `_append`, `_actor`)."""

    ctx: Context

    # -- plumbing --------------------------------------------------------------------------------------
    def _state(self) -> ledger.State:
        from git_lanes import ledger

        return ledger.state_at(self.ctx.store, ledger.head(self.ctx.store))

    def _actor(self, actor: str | None) -> Actor:
        """An agent named by a face is an AgentId (an empty one refused, as every face refuses it); without
        one, the person in git's identity acts."""
        return AgentId(actor) if actor is not None else Actor(self.ctx.store.signature().name)

    def _append(self, op_type: str, actor: str, args: dict[str, Any]) -> dict[str, Any]:
        """Append one op under the writers' lock; its result as the ledger records it, plus `op`."""
        ledger, fold = _WRITING or _load_writing()
        op = ledger.make_op(op_type, actor, args, self.ctx.now())
        appended = ledger.append(self.ctx.store, op, fold)
        result = {**(appended.op.result or {}), "op": op.id}
        created = result.pop("new_agents", None)  # domain/agents.py NEW_AGENTS, loaded only when present
        if created:
            from git_lanes.domain import agents

            known = self._state().names("agents")
            for agent in created:
                notice(agents.first_seen_notice(agent, [name[:-len(".json")] for name in known]))
        return result

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
                                hint=f"register it with {command('agent register', 'ID', lane='LANE')}")
            return None
        path, _ = lanes.workspace_state(self.ctx, lane)
        if path is None:
            if required:
                lanes.require_workspace(self.ctx, lane)
            return None
        # A name in another encoding (held as lone surrogates) as people see it, `\xe9`: a ledger record is UTF-8
        # text, and every agent's set shows it alike, so overlaps on it are still found
        from git_lanes.model.text import shown_path

        return sorted(shown_path(changed) for changed in self.ctx.store.changed_paths(path))

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
