"""Where each lane stands against the trunk, and which lanes would collide: the overlap radar.

A pair collides when promoting one into the other would stop on a collision (DESIGN.md §3): both changed
the same path since they forked. The radar asks promotion's own planner for every pair, so it can never
disagree with what `promote` would do, and reads no file of any workspace."""

from __future__ import annotations

from itertools import combinations

from git_lanes.domain import lanes, promotion
from git_lanes.domain.context import Context

# Paths listed per pair; the count is always exact.
MAX_PATHS = 50


def positions(ctx: Context) -> list[dict]:
    """Each lane's head and how many commits it is ahead of and behind the trunk."""
    trunk_head = lanes.lane_head(ctx, ctx.trunk)
    rows = []
    for name in lanes.lane_names(ctx):
        head = lanes.lane_head(ctx, name)
        ahead, behind = (0, 0) if name == ctx.trunk else ctx.store.ahead_behind(head, trunk_head)
        base = head if name == ctx.trunk else ctx.store.merge_base(head, trunk_head)
        rows.append({"lane": name, "head": head, "trunk": name == ctx.trunk, "ahead": ahead, "behind": behind,
                     "merge_base": base})
    return rows


def overlaps(ctx: Context) -> list[dict]:
    """Every pair of lanes (the trunk included) that changed a same path since they forked."""
    names = lanes.lane_names(ctx)
    found = []
    for a, b in combinations(names, 2):
        if b == ctx.trunk:  # the trunk first in each of its pairs, as a person reads "trunk vs lane"
            a, b = b, a
        plan = promotion.plan(ctx, b, a)
        collisions = plan.comparison.collisions
        if collisions:
            found.append({"a": a, "b": b, "with_trunk": a == ctx.trunk, "count": len(collisions),
                          "paths": [c.to_dict() for c in collisions[:MAX_PATHS]], "merge_base": plan.base})
    return sorted(found, key=lambda o: (not o["with_trunk"], -o["count"], o["a"], o["b"]))


def radar(ctx: Context) -> dict:
    return {"trunk": ctx.trunk, "lanes": positions(ctx), "overlaps": overlaps(ctx)}
