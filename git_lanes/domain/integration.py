"""Integration: a finished task's lane passes through the merge gate into where its work is collected. A task
under a ticket lands on the ticket's integration lane (`tickets/<short-id>`, made from the trunk's head when
its first task lands), one with no ticket on the trunk. Promotion refuses to guess, so a collision or a
failing gate moves nothing: the task goes back to its owner as `needs_review`, with a handoff post naming
the colliding paths and the ways on, and a wake so the owner's `wait` returns."""

from __future__ import annotations

from git_lanes.domain import lanes, tasks
from git_lanes.domain.agents import SYSTEM, add_wake, validate_agent_id
from git_lanes.domain.board import add_post
from git_lanes.domain.context import Context
from git_lanes.errors import NotFound, Refused, StaleState, UserError, command, command_line
from git_lanes.ledger import Op, Tx
from git_lanes.model import refs
from git_lanes.store import RefUpdate

INTEGRATION_PREFIX = "tickets/"
SHORT = 8
REASONS = ("collision", "gate_failed")
# Of the colliding paths, this many are named in the post; the op's result keeps them all.
POSTED_PATHS = 20


def integration_lane(ticket_id: str) -> str:
    return INTEGRATION_PREFIX + ticket_id[:SHORT]


def target_for(ctx: Context, task: dict) -> str:
    """Where `task`'s lane is integrated: its ticket's integration lane, else the trunk."""
    return integration_lane(task["ticket"]) if task.get("ticket") else ctx.trunk


def ensure_lane(ctx: Context, name: str) -> bool:
    """Make the integration lane `name` from the trunk's head unless it exists: a ref only, no workspace
    (nobody edits it; promotions write its tree directly). Call with the writers' lock held. Returns whether
    it was made."""
    ref = refs.lane_ref(name, ctx.trunk)
    if ctx.store.read_ref(ref) is not None:
        lanes.lane_head(ctx, name)  # a ref git-lanes never wrote says so here
        return False
    clash = lanes.name_clash(ctx, name)
    if clash is not None:
        raise Refused(f"the integration lane {name!r} cannot exist beside lane {clash!r}", code="lane_name_clash",
                      hint=f"rename lane {clash} ({command('lane create', 'NEW', from_=clash)}, then delete it)")
    head = lanes.lane_head(ctx, ctx.trunk)
    ctx.store.update_refs([RefUpdate(ref, head, None, f"lanes: create integration lane {name}")])
    return True


def nothing_integrated(ctx: Context, ticket: dict) -> Refused | None:
    """Why `ticket` (a ready one: every task done) has no work to publish, or None when it has some: none of
    its tasks integrated anything. Its integration lane is missing (its tasks were done with no lane, or
    with --no-integrate), or, before it was ever published, holds nothing the trunk lacks (its tasks' lanes
    held no change): a pushed branch would have no commit to review. `publish` refuses with it, and `task
    done` reports it with the ticket that became ready, so the two never disagree."""
    lane = integration_lane(ticket["id"])
    short = ticket["id"][:SHORT]
    try:
        head = lanes.lane_head(ctx, lane)
    except NotFound:
        return Refused(f"ticket {short} has no integration lane {lane}: none of its tasks integrated",
                       code="nothing_integrated", details={"ticket": ticket["id"], "lane": lane},
                       hint=f"its tasks were done with no lane to integrate; to publish work, "
                            f"{command('lane create', lane)}, then {command('promote', 'LANE', into=lane)}")
    if ticket.get("publication") or not ctx.store.is_ancestor(head, lanes.lane_head(ctx, ctx.trunk)):
        return None
    return Refused(f"ticket {short}'s integration lane {lane} holds nothing the trunk lacks: none of its tasks "
                   "integrated a change", code="nothing_integrated", details={"ticket": ticket["id"], "lane": lane},
                   hint=f"its tasks' lanes held no change; to publish work, commit it in a lane, then "
                        f"{command('promote', 'LANE', into=lane)}")


def unpublishable(ctx: Context, ticket: dict) -> dict | None:
    """`nothing_integrated` as a record a result carries (code, message, hint), for a ready ticket's row."""
    refusal = nothing_integrated(ctx, ticket)
    return None if refusal is None else {"code": refusal.code, "message": refusal.message, "hint": refusal.hint}


def review(tx: Tx, op: Op) -> dict:
    """`task.review`: integrating the task failed (a collision, or a required gate), so nothing moved and the
    task goes back to its owner: status `needs_review`, a handoff post naming the paths and the ways on, and a
    `needs_review` wake. The owner keeps it (it does not lapse), reruns, and finishes it again."""
    task = tasks.get_task(tx, op.args.get("task"))
    reason = op.args.get("reason")
    if reason not in REASONS:
        raise UserError(f"unknown review reason {reason!r}", code="invalid_review")
    if task["status"] == "done":
        raise StaleState(f"task {task['id'][:8]} is already done", code="task_done")
    into = op.args.get("into")
    paths = [p for p in op.args.get("paths") or [] if isinstance(p, str)]
    ways = [w for w in op.args.get("ways") or [] if isinstance(w, dict)]
    gates = [g for g in op.args.get("gates") or [] if isinstance(g, str)]
    task.update(status="needs_review", blocked_reason=None,
                review={"into": into, "reason": reason, "paths": paths[:POSTED_PATHS], "gates": gates,
                        "lane_head": op.args.get("lane_head"), "time": op.time})
    tasks.save_task(tx, op, task)
    owner = task.get("owner") or _agent_or_none(op.actor)
    post = None
    if owner is not None:
        text = _review_text(task, into, reason, paths, gates, ways)
        post = add_post(tx, op, SYSTEM, "handoff", text, owner)
        add_wake(tx, owner, op, "needs_review", {"task": task["id"], "title": task["title"], "into": into,
                                                 "reason": reason, "paths": paths[:POSTED_PATHS], "post": post})
    return {"task": task["id"], "status": "needs_review", "owner": owner, "version": task["version"],
            "into": into, "reason": reason, "paths": paths, "gates": gates, "post": post}


def _agent_or_none(actor: str) -> str | None:
    try:
        return validate_agent_id(actor)
    except UserError:
        return None


def _review_text(task: dict, into: str | None, reason: str, paths: list[str], gates: list[str],
                 ways: list[dict]) -> str:
    head = f"task {task['id'][:8]} \"{task['title']}\" did not integrate into {into}: nothing moved; it is yours " \
           f"to review"
    if reason == "collision":
        shown = paths[:POSTED_PATHS]
        more = f" and {len(paths) - len(shown)} more" if len(paths) > len(shown) else ""
        lines = [head, f"changed on both sides: {', '.join(shown)}{more}"]
    else:
        lines = [head, f"required gate(s) failed: {', '.join(gates) or '?'}"]
    lines += [f"{w.get('way')}: {w.get('command')}" for w in ways]
    lines.append(f"then: git lanes task done {task['id'][:8]}")
    return "\n".join(lines)


def ways_after_gate_failure(lane: str, target: str) -> list[dict]:
    return [{"way": "fix", "command": command_line("promote", lane, into=target, dry_run=True),
             "what": f"fix what the gate found in {lane}'s workspace and commit; the dry run shows what lands"}]
