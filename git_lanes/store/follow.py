"""Bringing a workspace's files along when its lane fast-forwarded, the way `git merge --ff-only` does: paths
the workspace has not touched are updated, edits elsewhere are kept, and an edit, an untracked file or a
nested repository in the way refuses the whole update before any file is written."""

from __future__ import annotations

from git_lanes.errors import Conflict
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from git_lanes.store.repo import Store

MISSING = "state not in this repository"


def fast_forward_files(store: Store, path: Path, tree: str) -> dict[str, list[str]] | None:
    """Update the workspace at `path` (its HEAD still on the old state) to `tree`. None when done, else
    what is in the way: why -> the paths, nothing written."""
    head = store.workspace_head(path)
    try:
        plan = store.plan_checkout(path, tree, baseline=store.tree_of(head) if head else None, force=False)
    except KeyError:
        return {MISSING: [tree]}
    except Conflict as exc:
        return {"the index is locked by another git command": [exc.details.get("lock", str(path))]}
    if plan.refusals:
        blocked: dict[str, list[str]] = {}
        for where, why in sorted(plan.refusals.items()):
            blocked.setdefault(why, []).append(where)
        return blocked
    try:
        store.apply_checkout(path, plan)
    except Conflict as exc:  # the index lock was taken meanwhile: the next sync finishes the files
        return {exc.message: [str(path)]}
    return None
