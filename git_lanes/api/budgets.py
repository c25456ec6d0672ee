"""Budgets per lane, task and ticket through the API: set, clear and show them with what was spent, the
check in front of a spawn, and what happens when an agent's hooks find one spent (its task is blocked with
a board post)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError, UnsupportedFormat, UserError, command

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import budgets, control, lanes, runs, tasks, tickets, transitions
    from git_lanes.domain.agents import SYSTEM, validate_agent_id
    from git_lanes.model.budgets import SCOPES, Budget, level
    from git_lanes.model.runs import RunState


@held
class BudgetsApi:
    """Mixed into `Lanes` beside LedgerApi (`_state`, `_append`, `_actor`) and RunsApi (`_runs`)."""

    ctx: Context
    _state: Callable[[], ledger.State]
    _append: Callable[[str, str, dict[str, Any]], dict[str, Any]]
    _actor: Callable[[str | None], str]
    _runs: Callable[[], control.LightRepo]
    task_block: Callable[..., Any]
    board_post: Callable[..., Any]

    def _subject(self, lane: str | None, task: str | None, ticket: str | None) -> tuple[str, str]:
        from git_lanes.domain import lanes, tasks, tickets
        from git_lanes.model.budgets import SCOPES

        given = [(scope, value) for scope, value in zip(SCOPES, (lane, task, ticket)) if value is not None]
        if len(given) != 1:
            raise UserError("name exactly one lane, task or ticket", code="one_subject")
        scope, value = given[0]
        state = self._state()
        if scope == "lane":
            lanes.lane_head(self.ctx, value)
            return scope, value
        if scope == "task":
            return scope, tasks.resolve_task(state, value)
        return scope, tickets.resolve_ticket(state, value)

    def budget_set(self, *, lane: str | None = None, task: str | None = None, ticket: str | None = None,
                   usd: float | None = None, tokens: int | None = None, actor: str | None = None) -> dict[str, Any]:
        """Set the money (`usd`) and/or token budget of one lane, task or ticket (exactly one of them)."""
        from git_lanes.model.budgets import Budget

        scope, key = self._subject(lane, task, ticket)
        Budget(scope, key, usd, tokens)  # refused here, before anything is written
        result = self._append("budget.set", self._actor(actor), {"scope": scope, "key": key, "usd": usd,
                                                                 "tokens": tokens})
        return result | {"budget": self._show_one(Budget.from_dict(result["budget"]))}

    def budget_clear(self, *, lane: str | None = None, task: str | None = None, ticket: str | None = None,
                     actor: str | None = None) -> dict[str, Any]:
        """Remove the budget of one lane, task or ticket (exactly one of them)."""
        scope, key = self._subject(lane, task, ticket)
        return self._append("budget.clear", self._actor(actor), {"scope": scope, "key": key})

    def budget_show(self, *, lane: str | None = None, task: str | None = None, ticket: str | None = None) -> list[dict[str, Any]]:
        """Every budget (or one lane's, task's or ticket's) with what was spent against it and its level."""
        from git_lanes.domain import budgets, transitions

        state = self._state()
        found = budgets.all_budgets(state)
        if any(v is not None for v in (lane, task, ticket)):
            scope, key = self._subject(lane, task, ticket)
            found = [b for b in found if (b.scope, b.key) == (scope, key)]
        if not found:
            return []
        run_states, records = self._run_states(), transitions.all_transitions(self.ctx)
        return [budgets.view(b, budgets.spend(state, b.scope, b.key, run_states, records)) for b in found]

    def _show_one(self, budget: Budget) -> dict[str, Any]:
        from git_lanes.domain import budgets, transitions

        state = self._state()
        return budgets.view(budget, budgets.spend(state, budget.scope, budget.key, self._run_states(),
                                                  transitions.all_transitions(self.ctx)))

    def _run_states(self) -> list[RunState]:
        from git_lanes.model.runs import RunState

        repo = self._runs()
        found = []
        for run, head in repo.log.runs().items():
            try:
                found.append(RunState.from_dict(json.loads(repo.log.state_at(head))))
            except (ValueError, UnsupportedFormat):
                continue
        return found

    def budget_gate(self, *, lane: str | None = None, task: str | None = None) -> list[dict[str, Any]]:
        """The budgets over a lane and a task (and its ticket) that are spent: a spawn there is refused."""
        return [view for view in self.budgets_over([(lane, task)])[0] if view["level"] == "exhausted"]

    def budgets_over(self, subjects: list[tuple[str | None, str | None]]) -> list[list[dict[str, Any]]]:
        """For each (lane, task): the budgets over it (the lane's, the task's and its ticket's) with what was
        spent and their level. Runs and transitions are read once for all of them, and only if a budget exists."""
        from git_lanes.domain import budgets, transitions
        from git_lanes.model.budgets import Budget

        state = self._state()
        chosen: list[list[Budget]] = []
        for lane, task in subjects:
            wanted = [("lane", lane), ("task", task)]
            if task:
                wanted.append(("ticket", _ticket_of(state, task)))
            chosen.append([b for scope, key in wanted if key for b in [budgets.get_budget(state, scope, key)] if b])
        if not any(chosen):
            return [[] for _ in subjects]
        run_states, records = self._run_states(), transitions.all_transitions(self.ctx)
        return [[budgets.view(b, budgets.spend(state, b.scope, b.key, run_states, records)) for b in found]
                for found in chosen]

    def day_spend(self) -> float:
        """What every run here cost today (UTC)."""
        from git_lanes.domain import runs

        today = runs.day_of(self.ctx.now())
        return round(sum(float(s.days.get(today, {}).get("cost_usd", 0.0)) for s in self._run_states()), 6)

    def budget_exhausted(self, run: str, spent: list[dict[str, Any]]) -> dict[str, Any]:
        """An agent's hooks found a budget spent: block its task and say so on the board. Never raises: the
        hook that calls this has already denied the call."""
        from git_lanes.domain import control
        from git_lanes.domain.agents import SYSTEM

        repo = self._runs()
        _, state = control.read_state(repo, run)
        if state is None:
            return {"blocked": None}
        what = "; ".join(f"{b['scope']} {b['key']}: {b['detail']}" for b in spent)
        reason = f"budget spent ({what})"
        blocked = None
        # a run of no task (its hooks started it) works on the task in its lane; the hooks found which
        task = state.task or next((b["task"] for b in spent if b.get("task")), None)
        if task:
            try:
                self.task_block(task, reason, state.agent if _agent_id(state.agent) else None)
                blocked = task
            except LanesError:
                blocked = None
        text = (f"run {run[:8]} ({state.agent}) is paused: {reason}. Its writes and commands are blocked. Raise "
                f"the budget with {command('budget set')}, then {command('task resume')} and "
                f"{command('run resume', run[:8], spawn=True)}.")
        try:
            post = self.board_post(text, state.agent if _agent_id(state.agent) else SYSTEM, kind="question")
        except LanesError:
            post = None
        return {"blocked": blocked, "post": post.to_dict() if hasattr(post, "to_dict") else post}


def _agent_id(name: str) -> bool:
    from git_lanes.domain.agents import validate_agent_id

    try:
        validate_agent_id(name)
    except UserError:
        return False
    return True


def _ticket_of(state: ledger.State, task: str) -> str | None:
    from git_lanes.domain import tasks

    try:
        ticket = tasks.get_task(state, task).get("ticket")
    except LanesError:  # a run's task gone from the ledger still has its lane's budget
        return None
    return str(ticket) if ticket else None
