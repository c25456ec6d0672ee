"""`trace STATE`: the chain of transitions, promotions and resets that led to a state, across lanes, with the
prompts and cost behind each; and the filters people use to find things in history (text, tag, date, model)."""

from __future__ import annotations

import re

from git_lanes.domain import inspect, transitions
from git_lanes.domain.context import Context
from git_lanes.domain.wording import checked_limit
from git_lanes.errors import UserError
from git_lanes.model.records import CostTotals, Transition
from git_lanes.model.text import quoted


def matcher(grep: str | None, tag: str | None, since: float | None, model: str | None):
    """The predicate of `history --grep --tag --since --model`: the prompt matches the regular expression
    (case-insensitive), the intent has the tag, it was made at or after `since`, its model's name contains
    `model` (case-insensitive)."""
    try:
        pattern = re.compile(grep, re.IGNORECASE) if grep else None
    except re.error as exc:
        raise UserError(f"--grep {grep!r} is not a regular expression: {exc}", code="invalid_pattern") from None
    wanted_model = model.lower() if model else None

    def matches(t: Transition) -> bool:
        return ((pattern is None or pattern.search(t.intent.prompt) is not None)
                and (tag is None or tag in t.intent.tags)
                and (since is None or t.created_at >= since)
                and (wanted_model is None or wanted_model in (t.intent.model or "").lower()))
    return matches


def _step(record: Transition, commit: str) -> dict:
    step = {"state": commit, "kind": record.kind, "id": record.id, "lane": record.lane, "status": record.status,
            "prompt": record.intent.summary, "agent": record.intent.agent_id, "model": record.intent.model,
            "tags": list(record.intent.tags), "cost": record.cost.to_dict(), "created_at": record.created_at}
    if record.kind == "promote":
        step["from_lane"] = record.extra.get("promoted_lane")
    return step


def trace(ctx: Context, spec: str, limit: int | None = None) -> dict:
    """Every state the given one descends from, newest first (git's topological order), each with the
    transition that made it: commits on lanes, promotions (naming the lane promoted, whose chain goes on
    beneath), and the resets that moved a lane onto a state of the chain. Plain git commits with no
    transition are listed too, as kind `git`."""
    checked_limit(limit)
    start = inspect.resolve_state(ctx, spec)
    records, unreadable = transitions.scan(ctx)
    by_state = {t.state: t for t in records}
    unread = {u.key: u for u in unreadable}
    resets: dict[str, list[Transition]] = {}
    for t in records:
        if t.kind == "reset" and t.extra.get("new_head"):
            resets.setdefault(t.extra["new_head"], []).append(t)
    steps: list[dict] = []
    total = CostTotals()  # a sum of bounded costs: no one transition's bound applies to it
    set_aside = []
    for info in ctx.store.walk(start):
        for reset in resets.get(info.oid, []):
            steps.append(_step(reset, info.oid) | {"kind": "reset", "onto": reset.extra.get("onto"),
                                                   "left": reset.base, "reason": reset.reason})
        record = by_state.get(info.oid)
        if record is not None:
            steps.append(_step(record, info.oid) | {"parents": list(info.parents)})
            total = total + record.cost
        else:
            if info.oid in unread:  # a step whose record cannot be read: shown as plain git, and said so
                set_aside.append(unread[info.oid].to_dict())
            steps.append({"state": info.oid, "kind": "git", "prompt": info.message.strip().split("\n", 1)[0],
                          "agent": info.author, "parents": list(info.parents), "created_at": float(info.time)})
        if limit is not None and len(steps) >= limit:
            break
    lanes_crossed = sorted({s["lane"] for s in steps if s.get("lane")})
    return {"state": start, "steps": steps[:limit] if limit is not None else steps, "lanes": lanes_crossed,
            "totals": total.to_dict() | {"transitions": sum(1 for s in steps if s["kind"] != "git")},
            "unreadable": set_aside}
