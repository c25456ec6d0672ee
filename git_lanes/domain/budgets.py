"""Budgets per lane, task and ticket: the ledger ops that set and clear them, and what was spent against each.

Costs roll up from runs and transitions: a run counts toward its lane, its task and its task's ticket (a run
of no task, one its hooks started, toward the task working in its lane since that task was made, as a
transition does); a transition recorded outside any run (a person's `commit --cost-usd`, an SDK session) counts toward its lane,
and toward the task working in that lane since the task was created. Transitions a run's hooks recorded
(tagged `run:<id>`) are already in that run's usage and are not counted twice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from git_lanes.domain import tasks, tickets
from git_lanes.domain.agents import Reader
from git_lanes.errors import NotFound, command
from git_lanes.ledger import Op, Tx
from git_lanes.ledger.state import MALFORMED_HINT
from git_lanes.model.budgets import DIRECTORY, SCOPES, Budget, budget_path, decode_key, describe, level, ratio
from git_lanes.model.records import Transition
from git_lanes.model.runs import RunState

RUN_TAG = "run:"


def set_budget(tx: Tx, op: Op) -> dict:
    """`budget.set`: the budget of one lane, task or ticket (replacing the one it had)."""
    budget = Budget(scope=op.args.get("scope", ""), key=op.args.get("key", ""), usd=op.args.get("usd"),
                    tokens=op.args.get("tokens"), set_by=op.actor, set_at=op.time)
    _require_subject(tx, budget.scope, budget.key)
    previous = tx.get(budget_path(budget.scope, budget.key))
    tx.put(budget_path(budget.scope, budget.key), budget.to_dict())
    return {"budget": budget.to_dict(), "previous": _plain(previous)}


def clear_budget(tx: Tx, op: Op) -> dict:
    """`budget.clear`: no budget for this lane, task or ticket any more."""
    scope, key = op.args.get("scope", ""), op.args.get("key", "")
    previous = tx.get(budget_path(scope, key))
    if previous is None:
        raise NotFound(f"{scope} {key} has no budget", code="no_budget", hint=f"see {command('budget show')}")
    tx.delete(budget_path(scope, key))
    return {"cleared": _plain(previous)}


def _plain(record: Any) -> Any:
    # what a peer wrote there may be no object at all: set or cleared over, it is reported as it was
    return {k: v for k, v in record.items() if k != "format"} if isinstance(record, dict) else record


def _require_subject(state: Reader, scope: str, key: str) -> None:
    if scope == "task":
        tasks.get_task(state, key)
    elif scope == "ticket":
        tickets.get_ticket(state, key)


def all_budgets(state: Reader) -> list[Budget]:
    found = []
    for scope in SCOPES:
        for name in state.names(f"{DIRECTORY}/{scope}"):
            if name.endswith(".json"):
                path = f"{DIRECTORY}/{scope}/{name}"
                record = state.get(path)
                if record is not None:
                    if isinstance(record, dict):  # its place names it, whatever it says
                        record = record | {"scope": scope, "key": decode_key(name[:-5])}
                    found.append(Budget.decode(record, f"ledger record {path}", MALFORMED_HINT))
    return found


def get_budget(state: Reader, scope: str, key: str) -> Budget | None:
    record = state.get(budget_path(scope, key))
    return None if record is None else Budget.decode(record, f"ledger record {budget_path(scope, key)}",
                                                     MALFORMED_HINT)


@dataclass(frozen=True)
class Spend:
    usd: float = 0.0
    tokens: int = 0
    runs: tuple[str, ...] = ()
    transitions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"usd": self.usd, "tokens": self.tokens, "runs": list(self.runs), "transitions": list(self.transitions)}


def from_a_run(transition: Transition) -> bool:
    return any(tag.startswith(RUN_TAG) for tag in transition.intent.tags)


def spend(state: Reader, scope: str, key: str, runs: list[RunState], transitions: list[Transition]) -> Spend:
    """What was spent on one lane, task or ticket, by its runs and the transitions recorded outside them."""
    if scope == "ticket":
        members = list(tickets.get_ticket(state, key).get("tasks") or [])
        parts = [spend(state, "task", task, runs, transitions) for task in members]
        return Spend(round(sum(p.usd for p in parts), 6), sum(p.tokens for p in parts),
                     tuple(r for p in parts for r in p.runs), tuple(t for p in parts for t in p.transitions))
    if scope == "lane":
        chosen_runs = [r for r in runs if r.lane == key]
        lane, since = key, None
    else:
        task = tasks.get_task(state, key)
        lane, since = task.get("lane"), float(task.get("created") or 0)
        # a run of no task (one its hooks started) counts as a transition outside runs does: toward the task
        # working in its lane since the task was made
        chosen_runs = [r for r in runs if r.task == key or (r.task is None and lane is not None and r.lane == lane
                                                             and r.created_at >= since)]
    chosen = [t for t in transitions if lane is not None and t.lane == lane and not from_a_run(t)
              and t.kind == "commit" and (since is None or t.created_at >= since)]
    usd = sum(r.usage.cost_usd for r in chosen_runs) + sum(t.cost.cost_usd for t in chosen)
    tokens = sum(r.usage.tokens for r in chosen_runs) + sum(t.cost.tokens_in + t.cost.tokens_out for t in chosen)
    return Spend(round(usd, 6), tokens, tuple(r.id for r in chosen_runs), tuple(t.id for t in chosen))


def view(budget: Budget, spent: Spend) -> dict[str, Any]:
    used = ratio(budget, spent.usd, spent.tokens)
    # a zero limit is reached at once (an infinite ratio): shown as used up, not as the ratio's cap
    return budget.to_dict() | {"spent": spent.to_dict(), "level": level(budget, spent.usd, spent.tokens),
                               "used": 1.0 if used == float("inf") else round(min(used, 1e9), 4),
                               "detail": describe(budget, spent.usd, spent.tokens)}
