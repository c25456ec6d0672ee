"""Read-only views: status, history with totals, one transition, diffs between states."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from git_lanes.domain import attention, lanes, transitions
from git_lanes.domain.context import Context
from git_lanes.domain.wording import checked_limit
from git_lanes.errors import LanesError, NotFound, UserError, command
from git_lanes.model import refs
from git_lanes.model.frozen import replace
from git_lanes.model.ids import LaneName
from git_lanes.model.records import STATUSES, CostTotals, Transition
from git_lanes.model.text import check_text

DIFF_MODES = ("patch", "stat", "name-only")
STATE_HINT = f"name a lane ({command('lane list')}), a transition id ({command('history')}) or a git revision"


def unsnapshotted(ctx: Context, lane: str, path: Path, proposals: list[Transition] | None = None) \
        -> dict[str, str]:
    """Paths whose content no state holds: what `git diff` shows (the files against the index, which each
    snapshot writes), plus what the index holds beyond HEAD when no pending proposal explains it (a snapshot
    killed before it was proposed, a `git add` by hand). A pending proposal's paths are not unsnapshotted.
    `proposals`: every pending proposal, when the caller has read them already."""
    unstaged, staged = ctx.store.workspace_changes(path)
    committed = _committed_off_lane(ctx, lane, path)
    if staged:
        own = transitions.pending_for(ctx, lane) if proposals is None else [t for t in proposals if t.lane == lane]
        if not own:
            return {**committed, **staged, **unstaged}
    return {**committed, **unstaged}


def left_unsnapshotted(ctx: Context, lane: str, then: str) -> dict | None:
    """What `lane`'s workspace holds that no state does (as `status` counts it: a stat-cache walk), which a
    promotion of the lane does not take: the paths, and a hint naming the command that snapshots them and
    `then`, the command that takes them on (quoted with `command`). None when the workspace holds nothing
    of the kind, or the lane has no workspace here or a broken one (`status` reports those)."""
    try:
        path = lanes.workspace_path(ctx, lane)
        changed = unsnapshotted(ctx, lane, path) if path is not None else {}
    except LanesError:
        return None
    if not changed or path is None:
        return None
    snapshot = command("commit", w=lane, m="PROMPT", auto_accept=True)
    return {"lane": lane, "workspace": str(path), "count": len(changed), "paths": sorted(changed),
            "hint": f"snapshot them with {snapshot}, then {then}"}


def _committed_off_lane(ctx: Context, lane: str, path: Path) -> dict[str, str]:
    """What plain `git commit` (or `git checkout`) moved the workspace's HEAD to beyond the lane head: no
    state holds it yet, though `git status` there shows nothing."""
    head = lanes.lane_head(ctx, lane)
    at = ctx.store.workspace_head(path)
    if lane == ctx.trunk or at is None or at == head:
        return {}
    return {c.path: c.kind for c in ctx.store.diff_trees(ctx.store.tree_of(head), ctx.store.tree_of(at))}


def status(ctx: Context) -> dict:
    from git_lanes.domain import undo_marks  # with `status` alone: `show` and `history` load this module too

    lane_rows = []
    dirty = []
    # read once, not again for each lane whose index is ahead
    proposals, unreadable = transitions.pending(ctx)
    for lane in lanes.list_lanes(ctx):
        try:
            changed = unsnapshotted(ctx, lane.name, lane.workspace, proposals) if lane.workspace else {}
            needing = attention.needing(ctx, lane.name, lane.workspace) if lane.workspace else []
        except LanesError as exc:  # one unreadable workspace is shown as such; the others still are
            lane = replace(lane, workspace=None, broken=exc.message)
            changed, needing = {}, []
        row = lane.to_dict() | {"dirty": sorted(changed), "attention": needing}
        lane_rows.append(row)
        if changed or needing:
            dirty.append({"lane": lane.name, "workspace": str(lane.workspace), "paths": changed,
                          "attention": needing})
    pending = [t.to_dict() for t in proposals]
    return {"trunk": ctx.trunk, "lanes": lane_rows, "proposals": pending, "dirty": dirty,
            "unreadable": [u.to_dict() for u in unreadable], "interrupted_undos": undo_marks.interrupted(ctx)}


def history(ctx: Context, *, lane: str | None = None, status: str | None = None, agent: str | None = None,
            limit: int | None = None, matches: Callable[[Transition], bool] | None = None) -> dict:
    if status is not None and status not in STATUSES:
        raise UserError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if lane is not None:
        lanes.lane_head(ctx, lane)
    checked_limit(limit)
    readable, unreadable = transitions.scan(ctx)
    selected = [t for t in reversed(readable)
                if (lane is None or t.lane == lane) and (status is None or t.status == status)
                and (agent is None or t.intent.agent_id == agent) and (matches is None or matches(t))]
    total = sum((t.cost for t in selected), CostTotals())
    shown = selected if limit is None else selected[:limit]
    counts = {s: sum(1 for t in selected if t.status == s) for s in STATUSES}
    # A note set aside may be one that matched: each is reported, unless its state names another lane.
    set_aside = [u.to_dict() for u in unreadable if lane is None or u.lane in (None, lane)]
    return {"transitions": [t.to_dict() for t in shown], "totals": total.to_dict() | {"count": len(selected)},
            "counts": counts, "unreadable": set_aside}


def show(ctx: Context, transition: Transition) -> dict:
    base_tree = ctx.store.tree_of(transition.base) if transition.base else ctx.store.empty_tree()
    changes = ctx.store.diff_trees(base_tree, transition.tree)
    return transition.to_dict() | {"changes": [{"path": c.path, "kind": c.kind} for c in changes]}


def resolve_state(ctx: Context, spec: str) -> str:
    """A state commit from a lane name, a transition id prefix, or any git revision."""
    spec = check_text(spec, "the state name", code="invalid_state").strip()
    if not spec:
        raise UserError("empty state name")
    # A full ref name that exists means that ref, as git reads `refs/heads/x` (gitrevisions' first rule), even
    # where a lane bears the same name: the lane keeps its short forms
    if _could_be_lane(spec) and not (spec.startswith("refs/") and ctx.store.read_ref(spec)) \
            and ctx.store.read_ref(refs.lane_ref(spec, ctx.trunk)):
        return lanes.lane_head(ctx, spec)  # refusing a head that is no commit
    # Any length, as `show` and `accept` take it: libgit2 calls every prefix under 4 digits ambiguous.
    if all(c in "0123456789abcdefABCDEF" for c in spec):
        try:
            return transitions.find(ctx, spec).state
        except NotFound:
            pass
    try:
        return ctx.store.resolve(spec)
    except NotFound as exc:
        exc.hint = exc.hint or STATE_HINT
        raise


def _could_be_lane(spec: str) -> bool:
    # Only a valid lane name is looked up as one: libgit2 raises ValueError for a ref name over ~1 KB.
    return LaneName.valid(spec)


def diff(ctx: Context, old: str, new: str, mode: str) -> dict:
    if mode not in DIFF_MODES:
        raise UserError(f"unknown diff mode {mode!r}")
    old_state, new_state = resolve_state(ctx, old), resolve_state(ctx, new)
    old_tree, new_tree = ctx.store.tree_of(old_state), ctx.store.tree_of(new_state)
    changes = ctx.store.diff_trees(old_tree, new_tree)
    result = {"from": old_state, "to": new_state,
              "changes": [{"path": c.path, "kind": c.kind} for c in changes]}
    if mode == "patch":
        result["patch"] = ctx.store.patch(old_tree, new_tree)
    elif mode == "stat":
        text, files, insertions, deletions = ctx.store.diff_stat(old_tree, new_tree)
        result |= {"stat": text, "files_changed": files, "insertions": insertions, "deletions": deletions}
    return result
