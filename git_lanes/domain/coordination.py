"""The coordination model's fold: how each ledger op changes the state, decided from that state and the op
alone. `FOLD` is what the ledger applies: every caller of `ledger.append`, `apply_op` and `replay` passes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from git_lanes.domain import (agents, board, budgets, claims, integration, ledger_undo, plans, ports, publishing,
                              tasks, tickets, upkeep, worktrees)
from git_lanes.errors import UserError
from git_lanes.ledger import Op, State, Tx

if TYPE_CHECKING:
    from git_lanes.ledger.state import Record

Handler = Callable[[Tx, Op], dict]


def heartbeat(tx: Tx, op: Op) -> dict:
    """Extend the lease, refresh the dirty set when the caller computed one, report unread posts and pending
    wakes, and deliver (once) the notices of this agent's ops that a sync refused. The first call of an agent
    registers it, and says so (`registered`)."""
    agent = agents.validate_agent_id(op.args.get("agent"))
    first = agents.first_call(tx, agent)
    record = agents.touch(tx, agent, op.time)
    dirty = None
    if op.args.get("files") is not None:
        dirty = claims.publish_dirty(tx, op, agent, record.get("lane"), op.args["files"])
    pending = agents.pending_wakes(tx, agent)
    refused = [w for w in pending if w["kind"] == "refused"]
    agents.take_wakes(tx, agent, {w["id"] for w in refused})
    return {"agent": agent, "lease_until": record["lease_until"], "unread": board.unread_count(tx, agent),
            "wakes": [w for w in pending if w["kind"] != "refused"], "refused": refused, "dirty": dirty} | (
        {"registered": True} if first else {})  # absent otherwise, as in the results recorded before it


def take(tx: Tx, op: Op) -> dict:
    """What `wait` returns with: the wakes it saw leave the queue and the posts it saw are marked read."""
    agent = agents.validate_agent_id(op.args.get("agent"))
    ids = op.args.get("wakes") or []
    taken = agents.take_wakes(tx, agent, set(ids))
    through = op.args.get("through")
    if through is not None:
        board.mark_read(tx, agent, int(through))
    return {"agent": agent, "taken": [w["id"] for w in taken], "through": through}


def refused(tx: Tx, op: Op) -> dict:
    """Record that a sync found an op no longer holds (args: the original `op` and the `refusal`); the
    original actor hears of it on its next heartbeat or wait."""
    original = op.args.get("op")
    if not isinstance(original, dict) or not original.get("type"):
        raise UserError("a refused record needs the original op", code="invalid_refused")
    reason = op.args.get("refusal") or {}
    try:
        agents.validate_agent_id(op.actor)
    except UserError:
        return {"notified": None}
    agents.add_wake(tx, op.actor, op, "refused", {"original": {k: original.get(k) for k in ("id", "type", "args")},
                                                   "error": reason.get("error"), "message": reason.get("message")})
    return {"notified": op.actor, "original": original.get("id")}


HANDLERS: dict[str, Handler] = {
    "agent.register": agents.register,
    "agent.heartbeat": heartbeat,
    "agent.touch": agents.touch_op,
    "task.create": tasks.create,
    "task.dep_add": tasks.dep_add,
    "task.claim": tasks.claim,
    "task.done": tasks.done,
    "task.block": tasks.block,
    "task.resume": tasks.resume,
    "task.handoff": tasks.handoff,
    "task.review": integration.review,
    "ticket.open": tickets.open_ticket,
    "ticket.link": tickets.link,
    "ticket.publish": publishing.publish,
    "ticket.close": publishing.close,
    "ticket.release_claims": publishing.release_claims,
    "publish.lock": publishing.lock,
    "gc.prune": upkeep.prune,
    "publish.unlock": publishing.unlock,
    "publish.intent": publishing.intend,
    "publish.failed": publishing.failed,
    "claim.add": claims.claim_add,
    "claim.release": claims.claim_release,
    "dirty.publish": claims.dirty_publish,
    "board.post": board.post,
    "board.read": board.read,
    "board.resolve": board.resolve,
    "board.answer": board.answer,
    ledger_undo.RELIST: board.relist,
    "wake.take": take,
    "refused": refused,
    "worktree.assign": worktrees.assign,
    "worktree.release": worktrees.release,
    "ports.reserve": ports.reserve,
    "ports.release": ports.release,
    "budget.set": budgets.set_budget,
    "budget.clear": budgets.clear_budget,
    "op.undo": ledger_undo.apply,
    "plan.dispatch": plans.dispatch,
}


def _short(value: Any) -> str:
    return str(value)[:8] if value else "-"


SUMMARIES: dict[str, Callable[[Op, dict], str]] = {
    "agent.register": lambda op, r: f"register {r.get('agent')} (kind {r.get('kind')}, lane {r.get('lane') or '-'})",
    "agent.heartbeat": lambda op, r: f"heartbeat {r.get('agent')}" + (" (registering it)" if r.get("registered")
                                                                       else ""),
    "agent.touch": lambda op, r: f"touch {r.get('agent')}",
    "task.create": lambda op, r: f"create task {_short(r.get('task'))} \"{op.args.get('title')}\"",
    "task.dep_add": lambda op, r: f"task {_short(r.get('task'))} depends on {_short(r.get('depends_on'))}",
    "task.claim": lambda op, r: f"claim task {_short(r.get('task'))} for {r.get('owner')} (v{r.get('version')})",
    "task.done": lambda op, r: f"done task {_short(r.get('task'))}"
                               + (f", integrated into {op.args['integrated'].get('into')}"
                                  if isinstance(op.args.get("integrated"), dict) else ""),
    "task.review": lambda op, r: f"task {_short(r.get('task'))} back to {r.get('owner') or '-'} for review: "
                                 f"{r.get('reason')} into {r.get('into')}",
    "task.block": lambda op, r: f"block task {_short(r.get('task'))}: {op.args.get('reason')}",
    "task.resume": lambda op, r: f"resume task {_short(r.get('task'))}",
    "task.handoff": lambda op, r: f"hand task {_short(r.get('task'))} from {r.get('from') or '-'} to {r.get('to')}",
    "ticket.open": lambda op, r: f"open ticket {_short(r.get('ticket'))} \"{op.args.get('title')}\"",
    "ticket.link": lambda op, r: f"link task {_short(r.get('task'))} to ticket {_short(r.get('ticket'))}",
    "ticket.publish": lambda op, r: f"{r.get('kind')} for ticket {_short(r.get('ticket'))}"
                                    + (f": {r['url']}" if r.get("url") else ""),
    "ticket.close": lambda op, r: f"close ticket {_short(r.get('ticket'))}: merged ({r.get('how')})",
    "ticket.release_claims": lambda op, r: f"release the claims of ticket {_short(r.get('ticket'))} "
                                           f"({sum(len(x['globs']) for x in r.get('released') or [])} globs)",
    "gc.prune": lambda op, r: f"gc: tombstones for {r.get('pruned')} pruned refs",
    "publish.lock": lambda op, r: f"lock ticket {_short(r.get('ticket'))} for publishing by {r.get('holder')}",
    "publish.unlock": lambda op, r: f"unlock ticket {_short(r.get('ticket'))}"
                                    + ("" if r.get("released") else " (not held)"),
    "publish.intent": lambda op, r: f"about to {'update' if op.args.get('update') else 'open'} the pull request "
                                    f"of ticket {_short(r.get('ticket'))} from {r.get('branch')}",
    "publish.failed": lambda op, r: f"the pull request command of ticket {_short(r.get('ticket'))} failed",
    "claim.add": lambda op, r: f"claim {' '.join(r.get('added') or []) or 'nothing new'} for {r.get('agent')}",
    "claim.release": lambda op, r: f"release {' '.join(r.get('released') or []) or 'nothing'} for {r.get('agent')}",
    "dirty.publish": lambda op, r: f"dirty set of {r.get('agent')}: {len(r.get('files') or [])} files",
    "board.post": lambda op, r: f"post #{r.get('post')} {r.get('kind')} to {r.get('to') or 'everyone'}",
    "board.read": lambda op, r: f"read board through #{r.get('cursor')}",
    "board.resolve": lambda op, r: f"resolve post #{r.get('post')}",
    "board.answer": lambda op, r: f"answer post #{r.get('answers')} with #{r.get('post')}",
    "wake.take": lambda op, r: f"take {len(r.get('taken') or [])} wakes"
                               + (f", read through #{r['through']}" if r.get("through") else ""),
    "worktree.assign": lambda op, r: f"assign lane {r.get('lane')} to {r.get('agent')}",
    "worktree.release": lambda op, r: f"release lane {r.get('lane') or '-'} of {r.get('agent')}",
    "ports.reserve": lambda op, r: f"reserve ports {' '.join(map(str, r.get('ports') or [])) or 'none'} for lane "
                                   f"{r.get('lane')}",
    "ports.release": lambda op, r: f"release ports of lane {r.get('lane')}",
    "budget.set": lambda op, r: f"budget of {op.args.get('scope')} {op.args.get('key')}: "
                                f"{(r.get('budget') or {}).get('usd')} USD, {(r.get('budget') or {}).get('tokens')} tokens",
    "budget.clear": lambda op, r: f"clear the budget of {op.args.get('scope')} {op.args.get('key')}",
    ledger_undo.RELIST: lambda op, r: f"retraction list: {len(op.args.get('posts') or [])} posts",
    "op.undo": lambda op, r: f"undo {op.args.get('type')} {_short(op.args.get('undoes'))}",
    "plan.dispatch": lambda op, r: f"dispatch plan {r.get('name')}: {len(r.get('tasks') or [])} tasks",
    "refused": lambda op, r: f"refused {(op.args.get('op') or {}).get('type')} "
                             f"{_short((op.args.get('op') or {}).get('id'))}",
}


class CoordinationFold:
    """Applies coordination ops. Unknown op types (from a newer git-lanes) are refused, not guessed at."""

    def apply(self, state: State, op: Op) -> tuple[dict[str, Record | None], dict[str, Any]]:
        handler = HANDLERS.get(op.type)
        if handler is None:
            raise UserError(f"unknown ledger op {op.type!r}", code="unknown_op", hint="upgrade git-lanes")
        tx = Tx(state)
        result = handler(tx, op)
        if op.type not in agents.SAY_REGISTERED:
            created = agents.new_agents(state, tx.edits)
            if created:
                result = {**result, agents.NEW_AGENTS: created}
        return tx.edits, result

    def summary(self, op: Op, result: dict[str, Any]) -> str:
        describe = SUMMARIES.get(op.type)
        return f"{op.actor}: {describe(op, result) if describe else op.type}"


FOLD = CoordinationFold()
