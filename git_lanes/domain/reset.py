"""`lane reset`: start a lane again from another lane's head. The old head, when it holds work the new one
lacks, is kept as a rejected state of kind "reset" with the reason, so the attempt stays signal."""

from __future__ import annotations

from git_lanes.domain import attention, lanes, oplog, restore, transitions
from git_lanes.domain.context import Context
from git_lanes.errors import Refused, command, option
from git_lanes.model import refs
from git_lanes.model.ids import LaneName
from git_lanes.model.records import Intent, ResetExtra, Transition
from git_lanes.model.text import check_reason
from git_lanes.store import RefUpdate

RESET_AGENT = "git-lanes"


def reset(ctx: Context, lane: str, onto: str, *, force: bool, reason: str | None, agent_id: str | None) -> dict:
    reason = check_reason(reason)
    if lane == ctx.trunk:
        raise Refused("the trunk lane cannot be reset", code="trunk",
                      hint="promote into it, or restore a state in its worktree and commit")
    old = lanes.lane_head(ctx, lane)
    new = lanes.lane_head(ctx, onto)
    path = lanes.workspace_path(ctx, lane)
    kept = None
    checkout = None
    if path is not None:
        unsaved = restore.has_unsaved(ctx, lane, path)
        if unsaved and not force:
            raise Refused(f"workspace of {lane!r} has unsnapshotted edits", code="dirty_workspace",
                          hint=f"snapshot them with {command('commit')}, or pass {option('force')} to keep them in a "
                               "backup ref and reset anyway")
        # Planned before anything moves: a refusal leaves the lane, its refs and every file as they were.
        checkout = restore.planned_checkout(ctx, lane, path, new, force=force, what=f"resetting onto {onto}")
        kept = restore.keep_before(ctx, lane, path, checkout, unsaved, f"reset onto {onto}")
    why = reason or f"reset onto {onto} at {new[:8]}"
    record = None
    updates = []
    if not ctx.store.is_ancestor(old, new):
        record = _kept_attempt(ctx, lane, old, new, onto, why, agent_id or RESET_AGENT)
        updates += [transitions.record_updates(ctx, [record], f"lanes: reset {lane}: keep {old[:8]}"),
                    RefUpdate(refs.rejected_ref(record.id), record.state, None, f"lanes: reset {lane}: {why}")]
    if old != new:
        updates.append(RefUpdate(refs.lane_ref(lane, ctx.trunk), new, old, f"lanes: reset {lane} onto {onto}"))
    ctx.store.update_refs(updates)
    stale = [t for t in transitions.pending_for(ctx, lane) if t.base == old and old != new]
    for proposal in stale:
        transitions.reject(ctx, proposal, f"the lane was reset onto {onto}; this was proposed on {old[:8]}")
    if path is not None and checkout is not None:
        oplog.files_moved(lane)
        ctx.store.apply_checkout(path, checkout)
        ctx.store.set_workspace_head(path, new)
        attention.forget(ctx, path)
    return {"lane": lane, "onto": onto, "from": old, "to": new, "workspace": str(path) if path else None,
            "kept_at": refs.rejected_ref(record.id) if record else None,
            "transition": record.to_dict() if record else None, "backup": kept,
            "rejected_proposals": [t.id for t in stale],
            "nested_left": sorted(checkout.nested) if checkout else []}


def _kept_attempt(ctx: Context, lane: str, old: str, new: str, onto: str, reason: str, agent_id: str) -> Transition:
    """A state commit holding the old head's tree (its own note would otherwise be overwritten), recorded
    as a rejected transition of kind "reset"."""
    transition_id = transitions.new_id()
    intent = Intent(prompt=f"Reset {lane} onto {onto}\n\n{reason}", agent_id=agent_id)
    tree = ctx.store.tree_of(old)
    state = ctx.store.write_commit(tree, [old], transitions.commit_message(intent, lane, transition_id, "reset"),
                                   author_name=agent_id, author_email=f"{agent_id}@lanes")
    now = ctx.now()
    return Transition(id=transition_id, lane=lane, base=old, state=state, tree=tree, status="rejected",
                      intent=intent, kind="reset", created_at=now, decided_at=now, reason=reason,
                      extra=ResetExtra(LaneName(onto), new))
