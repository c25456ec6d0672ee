"""Unsaved work in workspaces: finding it, keeping it in a backup ref, and restoring a workspace to a state."""

from __future__ import annotations

from pathlib import Path

from git_lanes.domain import lanes, transitions
from git_lanes.domain.context import Context
from git_lanes.errors import Refused
from git_lanes.model import refs
from git_lanes.store import RefUpdate


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


def unsaved_tree(ctx: Context, lane: str, path: Path) -> str | None:
    """The workspace's content as a tree when no state holds it yet, else None. The index is left alone."""
    return ctx.store.content_tree(path) if has_unsaved(ctx, lane, path) else None


def backup(ctx: Context, lane: str, path: Path, tree: str, reason: str) -> str:
    """Keep `tree` (a workspace's unsaved content) at refs/lanes/backups/<lane>/<id>; return the ref."""
    head = ctx.store.workspace_head(path)
    backup_id = transitions.new_id()
    commit = ctx.store.write_commit(tree, [head] if head else [],
                                    f"Backup of lane {lane}'s workspace before {reason}\n")
    ref = f"{refs.BACKUPS}{lane}/{backup_id}"
    ctx.store.update_refs([RefUpdate(ref, commit, None, f"lanes: backup before {reason}")])
    return ref


def restore(ctx: Context, lane: str, path: Path, state: str, *, force: bool) -> dict:
    """Make the workspace's files equal `state` with its HEAD on the lane head, so the next commit records
    the return to `state` as a new transition. Unsaved edits are refused, or with `force` kept first."""
    head = lanes.lane_head(ctx, lane)
    kept = None
    if has_unsaved(ctx, lane, path):
        if not force:
            raise Refused(f"workspace of {lane!r} has unsnapshotted edits", code="dirty_workspace",
                          hint="snapshot them with `git lanes commit`, or pass --force to keep them in a "
                               "backup ref and restore anyway")
        kept = backup(ctx, lane, path, ctx.store.content_tree(path), f"restore to {state[:8]}")
    ctx.store.checkout(path, ctx.store.tree_of(state), force=True)
    if lane != ctx.trunk:
        ctx.store.set_workspace_head(path, head)
    return {"lane": lane, "workspace": str(path), "state": state, "lane_head": head, "backup": kept,
            "changed_from_head": [c.path for c in ctx.store.diff_trees(ctx.store.tree_of(head),
                                                                      ctx.store.tree_of(state))]}
