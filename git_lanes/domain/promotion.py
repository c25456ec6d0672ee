"""Promotion: bring a lane's changes into a target lane path by path, refusing to guess (DESIGN.md §3).

base = merge-base(L, T); ΔL = diff(base, L); ΔT = diff(base, T). Both diffs skip equal subtrees, so the cost
follows what changed. Any path both changed is a collision and nothing moves; otherwise the new tree is T's
tree with L's changes written over it (no content merge ever), committed with parents (T, L) and proposed on
T. Landing it is one compare-and-swap on T's ref, followed by bringing T's worktree up to date."""

from __future__ import annotations

from dataclasses import dataclass

from git_lanes.domain import attention, exclusive, lanes, transitions
from git_lanes.domain.collisions import Comparison, compare
from git_lanes.domain.context import Context
from git_lanes.domain.ownership import Exclusive
from git_lanes.errors import Conflict, UserError, command_line
from git_lanes.model import refs
from git_lanes.model.frozen import replace
from git_lanes.model.ids import LaneName
from git_lanes.model.records import Cost, Intent, PromotionExtra, Transition
from git_lanes.store import RefUpdate
from git_lanes.model.entries import Change


@dataclass(frozen=True)
class Plan:
    lane: str
    target: str
    lane_head: str
    target_head: str
    base: str | None
    comparison: Comparison

    @property
    def up_to_date(self) -> bool:
        """The lane holds nothing the target lacks."""
        return self.base == self.lane_head

    def to_dict(self) -> dict:
        c = self.comparison
        return {"lane": self.lane, "target": self.target, "lane_head": self.lane_head,
                "target_head": self.target_head, "merge_base": self.base,
                "collisions": [x.to_dict() for x in c.collisions],
                "lane_only": [{"path": x.path, "kind": x.kind} for x in c.lane_only],
                "target_only": [{"path": x.path, "kind": x.kind} for x in c.target_only],
                "same_on_both": list(c.same_on_both)}


def plan(ctx: Context, lane: str, target: str) -> Plan:
    if lane == target:
        raise UserError(f"cannot promote {lane!r} into itself", code="same_lane")
    lane_head = lanes.lane_head(ctx, lane)
    target_head = lanes.lane_head(ctx, target)
    base = ctx.store.merge_base(lane_head, target_head)
    if base == lane_head:
        return Plan(lane, target, lane_head, target_head, base, Comparison((), (), ()))
    base_tree = ctx.store.tree_of(base) if base else None
    lane_changes = ctx.store.diff_trees(base_tree, ctx.store.tree_of(lane_head))
    target_changes = [] if base == target_head else ctx.store.diff_trees(base_tree, ctx.store.tree_of(target_head))
    return Plan(lane, target, lane_head, target_head, base, compare(lane_changes, target_changes))


def collision_error(p: Plan) -> Conflict:
    from git_lanes.model.text import shown_path  # a name in another encoding as `quoted` shows it: caf\xe9.txt

    rows = [f"  {shown_path(c.path)}  (lane {c.lane_kind}, {p.target} {c.target_kind})"
            for c in p.comparison.collisions]
    if len(rows) > 20:
        rows = rows[:20] + [f"  ... and {len(rows) - 20} more (see --json)"]
    count = len(p.comparison.collisions)
    ways = ways_on(p.lane, p.target)
    return Conflict(
        f"cannot promote {p.lane} into {p.target}: {count} path{'s' if count != 1 else ''} changed on both "
        f"sides since they forked ({p.base[:8] if p.base else 'no common state'}); nothing moved\n"
        + "\n".join(rows),
        code="collision", details=p.to_dict() | {"ways": ways},
        hint="three ways on:\n" + "\n".join(f"  {w['way']}: `{w['command']}`  ({w['what']})" for w in ways))


def ways_on(lane: str, target: str) -> list[dict]:
    return [
        {"way": "rerun", "command": command_line("lane reset", lane, onto=target),
         "what": f"start {lane} again from {target}'s new head; the attempt is kept as a rejected state"},
        {"way": "resolve", "command": command_line("promote", target, into=lane, force=True, auto_accept=True),
         "what": f"bring {target}'s versions into {lane} (yours stay in a backup ref), merge them by hand in "
                 f"its workspace, commit, and promote again"},
        {"way": "force", "command": command_line("promote", lane, into=target, force=True, auto_accept=True),
         "what": f"{lane}'s version wins on the colliding paths; {target}'s is kept in a backup ref"},
    ]


def merged_tree(ctx: Context, p: Plan) -> str:
    """T's tree with each of L's changes written over it. With collisions present (a forced promotion)
    L's side wins on every path it touched."""
    lane_changes = list(p.comparison.lane_only) + _lane_side_of_collisions(ctx, p)
    if not p.comparison.target_only and not p.comparison.collisions and p.base == p.target_head:
        return ctx.store.tree_of(p.lane_head)
    edits = {c.path: c.new for c in lane_changes}
    return ctx.store.edit_tree(ctx.store.tree_of(p.target_head), edits)


def _lane_side_of_collisions(ctx: Context, p: Plan) -> list[Change]:
    if not p.comparison.collisions:
        return []
    lane_tree = ctx.store.tree_of(p.lane_head)
    changes = []
    for collision in p.comparison.collisions:
        paths = [collision.path] if collision.lane_kind != "beneath" else [b for b, _ in collision.beneath]
        for path in paths:
            changes.append(Change(path, "forced", None, ctx.store.entry_at(lane_tree, path)))
    return changes


def backup_target(ctx: Context, p: Plan) -> str:
    """Keep the target's head (holding its versions of the colliding paths) under a backup ref."""
    ref = f"{refs.BACKUPS}{p.target}/{transitions.new_id()}"
    paths = ", ".join(c.path for c in p.comparison.collisions[:10])
    ctx.store.update_refs([RefUpdate(ref, p.target_head, None,
                                     f"lanes: backup of {p.target} before forced promotion of {p.lane}: {paths}")])
    return ref


def propose(ctx: Context, p: Plan, intent: Intent, cost: Cost, *, force: bool) -> Transition:
    """Write the merge commit (parents T, L) and propose it on T. Call with the writers' lock held."""
    if p.comparison.collisions and not force:
        raise collision_error(p)
    merged = merged_tree(ctx, p)
    lanes.require_no_internal(ctx, merged, f"promoting {p.lane} into {p.target}")
    _enforce_ownership(ctx, p)
    attention.require_writable(ctx, p.target, p.target_head)
    extra = PromotionExtra(LaneName(p.lane), p.lane_head, p.base)
    if p.comparison.collisions:
        extra = replace(extra, forced=tuple(c.path for c in p.comparison.collisions), backup=backup_target(ctx, p))
    record = transitions.propose_state(ctx, p.target, p.target_head, merged,
                                       [p.target_head, p.lane_head], intent, cost, "promote", extra)
    _supersede_earlier(ctx, record, p.lane)
    return record


def _enforce_ownership(ctx: Context, p: Plan) -> None:
    """A promotion changes what the lane changed; a path another task owns exclusively may come along only
    as its owner left it (the lane started from the owner's head, or took its version in since)."""
    lane_tree = ctx.store.tree_of(p.lane_head)
    owners: dict[str, str | None] = {}

    def owners_version(path: str, claim: Exclusive) -> bool:
        if claim.lane not in owners:
            owners[claim.lane] = ctx.store.read_ref(refs.lane_ref(claim.lane, ctx.trunk))
        head = owners[claim.lane]
        return head is not None and ctx.store.entry_at(ctx.store.tree_of(head), path) == \
            ctx.store.entry_at(lane_tree, path)

    paths = [c.path for c in p.comparison.lane_only] + [c.path for c in p.comparison.collisions]
    exclusive.enforce(ctx, p.lane, paths, f"promoting {p.lane} into {p.target}", exempt=owners_version)


def _supersede_earlier(ctx: Context, record: Transition, lane: str) -> None:
    """One live promotion per lane and target: earlier pending ones (left by a killed process, or proposed
    on a head the target has since left) are rejected in favour of the new one, and kept as signal."""
    for earlier in transitions.pending_for(ctx, record.lane):
        if earlier.id != record.id and earlier.promotion is not None \
                and earlier.promotion.promoted_lane == lane:
            transitions.reject(ctx, earlier, f"superseded by {record.id[:8]}, a newer promotion of {lane}")


def land(ctx: Context, record: Transition) -> tuple[Transition, dict | None]:
    """Accept `record` by compare-and-swap on its lane and bring the lane's worktree up to date. Pending
    paths are recorded before the ref moves, so a process killed at any instant leaves either nothing
    moved or a record that the next writer in that worktree finishes."""
    worktree = attention.prepare(ctx, record)
    accepted = transitions.accept(ctx, record)
    report = attention.finish(ctx, record.lane, worktree) if worktree is not None else None
    return accepted, report
