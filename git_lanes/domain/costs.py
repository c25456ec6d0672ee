"""Spending over time: each transition's tokens and dollars, accumulated per agent and per lane, so a face
can plot who spent what and when without summing records itself. Rejected transitions count: their cost was
spent all the same."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from git_lanes.model.records import CostTotals, Transition

if TYPE_CHECKING:
    from git_lanes.model.record import Unreadable


def _series(records: list[Transition], key: Callable[[Transition], str]) -> list[dict]:
    running: dict[str, CostTotals] = {}
    points: dict[str, list[dict]] = {}
    for t in records:
        name = key(t)
        total = running.get(name, CostTotals()) + t.cost
        running[name] = total
        points.setdefault(name, []).append({"time": t.created_at, "transition": t.id,
                                            "tokens": total.tokens_in + total.tokens_out,
                                            "cost_usd": total.cost_usd})
    rows = [{"key": name, "tokens": running[name].tokens_in + running[name].tokens_out,
             "cost_usd": running[name].cost_usd, "points": points[name]} for name in running]
    return sorted(rows, key=lambda r: (-r["cost_usd"], -r["tokens"], r["key"]))


def series(transitions: Iterable[Transition], unreadable: Iterable[Unreadable] = ()) -> dict:
    """Cumulative tokens and dollars per agent and per lane, oldest point first; `unreadable`: the notes
    set aside, whose cost is not counted, said so."""
    records = sorted(transitions, key=lambda t: (t.created_at, t.id))
    total = sum((t.cost for t in records), CostTotals())
    return {"by_agent": _series(records, lambda t: t.intent.agent_id),
            "by_lane": _series(records, lambda t: t.lane),
            "total": total.to_dict() | {"tokens": total.tokens_in + total.tokens_out, "count": len(records)},
            "start": records[0].created_at if records else None,
            "end": records[-1].created_at if records else None,
            "unreadable": [u.to_dict() for u in unreadable]}
