"""Unsaved work in workspaces: finding it, keeping it in a backup ref, and restoring a workspace to a state."""

from __future__ import annotations

from pathlib import Path

from git_lanes.domain import lanes, transitions
from git_lanes.domain.context import Context
from git_lanes.domain.wording import some
from git_lanes.errors import Refused, command, option
from git_lanes.model import refs
from git_lanes.store import RefUpdate
from git_lanes.model.entries import GITLINK
from git_lanes.store.checkout import CheckoutPlan


def has_unsaved(ctx: Context, lane: str, path: Path) -> bool:
    """Whether the workspace holds content no state holds yet (not its head, not a pending proposal, not a
    proposal just rejected on that head). Reads only, so a refusal based on it writes nothing. Commits made
    there with plain git that the lane does not hold count too."""
    at = ctx.store.workspace_head(path)
    if lane != ctx.trunk and at is not None and not ctx.store.is_ancestor(at, lanes.lane_head(ctx, lane)):
        return True
    if not ctx.store.changed_paths(path):
        return False
    held = [t.tree for t in transitions.pending_for(ctx, lane)] + _rejected_on(ctx, at)
    return not any(ctx.store.files_match(path, tree) for tree in dict.fromkeys(held))


def _rejected_on(ctx: Context, head: str | None) -> list[str]:
    """Trees of rejected states built on `head`: after a reject the workspace still shows the attempt,
    which refs/lanes/rejected/ keeps, so going back from it loses nothing. Commit reads only, no notes."""
    trees = []
    for state in ctx.store.list_refs(refs.REJECTED).values():
        info = ctx.store.commit_info(state)
        if info.parents[:1] == (head,):
            trees.append(info.tree)
    return trees


def backup(ctx: Context, lane: str, path: Path, tree: str, reason: str) -> str | None:
    """Keep `tree` (a workspace's unsaved content) at refs/lanes/backups/<lane>/<id>; return the ref. None
    when the workspace holds nothing a backup could keep: its files are its HEAD's, on the lane, and what
    differs is nested repositories (a clone, a submodule with edits), which a tree records only as the
    gitlink of their HEAD, whose commits are not in this repository, and which no command deletes."""
    head = ctx.store.workspace_head(path)
    if head is not None and (lane == ctx.trunk or ctx.store.is_ancestor(head, lanes.lane_head(ctx, lane))):
        changes = ctx.store.diff_trees(ctx.store.tree_of(head), tree)
        if all(change.new is not None and change.new.mode == GITLINK for change in changes):
            return None
    backup_id = transitions.new_id()
    commit = ctx.store.write_commit(tree, [head] if head else [],
                                    f"Backup of lane {lane}'s workspace before {reason}\n")
    ref = f"{refs.BACKUPS}{lane}/{backup_id}"
    ctx.store.update_refs([RefUpdate(ref, commit, None, f"lanes: backup before {reason}")])
    return ref


def keep_before(ctx: Context, lane: str, path: Path, plan: CheckoutPlan, unsaved: bool, reason: str) -> str | None:
    """Back up what carrying out `plan` would lose: the unsaved edits, and the ignored files it overwrites
    (which no snapshot takes). Returns the backup ref, or None when there is nothing to keep."""
    if not unsaved and not plan.ignored_overwritten:
        return None
    return backup(ctx, lane, path, ctx.store.content_tree(path, plan.ignored_overwritten), reason)


def planned_checkout(ctx: Context, lane: str, path: Path, state: str, *, force: bool, what: str) -> CheckoutPlan:
    """How the workspace of `lane` becomes `state`, decided before a file is touched (or a backup made). A
    nested repository in the way (a folder holding its own .git: a cloned dependency, a submodule with
    edits) is never deleted: refused, or with `force` left in place and reported."""
    lanes.require_no_internal(ctx, ctx.store.tree_of(state), f"{what}: the state",
                              hint="nothing was changed; choose a state that does not (no git-lanes command "
                                   "writes one)")
    plan = ctx.store.plan_checkout(path, ctx.store.tree_of(state), force=True)
    if plan.nested and not force:
        raise Refused(f"{what} would remove {some(sorted(plan.nested))} from the workspace of {lane!r}: "
                      f"{'each holds' if len(plan.nested) > 1 else 'it holds'} a git repository of its own "
                      "(a .git), which git-lanes never deletes", code="nested_repository",
                      details={"nested": sorted(plan.nested)},
                      hint=f"move it out of the workspace first; or pass {option('force')} to leave it in place (it is "
                           "reported, never deleted)")
    if plan.ignored_overwritten and not force:
        raise Refused(f"{what} would overwrite {some(sorted(plan.ignored_overwritten))} in the workspace of {lane!r}: "
                      "ignored, so no state holds what it says now; nothing was changed", code="in_the_way",
                      details={"paths": {p: "an ignored file is in the way" for p in plan.ignored_overwritten}},
                      hint=f"move it away first; or pass {option('force')} to keep it in a backup ref and go ahead")
    if plan.refusals:
        where, why = sorted(plan.refusals.items())[0]
        raise Refused(f"{what} stops at {where}: {why}; nothing was changed", code="in_the_way",
                      details={"paths": plan.refusals}, hint="move it away, then try again")
    return plan


def restore(ctx: Context, lane: str, path: Path, state: str, *, force: bool) -> dict:
    """Make the workspace's files equal `state` with its HEAD on the lane head, so the next commit records
    the return to `state` as a new transition. Unsaved edits are refused, or with `force` kept first. The
    whole change is planned before a file is touched, so a refusal changes nothing."""
    head = lanes.lane_head(ctx, lane)
    unsaved = has_unsaved(ctx, lane, path)
    if unsaved and not force:
        raise Refused(f"workspace of {lane!r} has unsnapshotted edits", code="dirty_workspace",
                      hint=f"snapshot them with {command('commit')}, or pass {option('force')} to keep them in a "
                           "backup ref and restore anyway")
    plan = planned_checkout(ctx, lane, path, state, force=force, what=f"restoring {state[:8]}")
    kept = keep_before(ctx, lane, path, plan, unsaved, f"restore to {state[:8]}")
    ctx.store.apply_checkout(path, plan)
    if lane != ctx.trunk:
        ctx.store.set_workspace_head(path, head)
    return {"lane": lane, "workspace": str(path), "state": state, "lane_head": head, "backup": kept,
            "nested_left": sorted(plan.nested), "ignored_removed": sorted(plan.expendable),
            "changed_from_head": [c.path for c in ctx.store.diff_trees(ctx.store.tree_of(head),
                                                                      ctx.store.tree_of(state))]}
