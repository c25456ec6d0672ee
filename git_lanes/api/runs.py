"""Runs through the API: start, list, show, timeline, phase, end, resume briefing and statistics. The run logs
are written by the same light code the agent hooks use (`domain/control.py`), under the same lock."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError, NotFound, StaleState, UnsupportedFormat, UserError, command
from git_lanes.model.ids import AgentId, random_hex
from git_lanes.model.text import quoted

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import briefing, control, lanes, runs, tasks
    from git_lanes.model.calls import HookEvent, bounded
    from git_lanes.model.policy import Policy
    from git_lanes.model.records import Cost
    from git_lanes.model.runs import RunEvent, RunState, Usage

FOLLOW_POLL_SECONDS = 0.05


@held
class RunsApi:
    ctx: Context
    commit: Callable[..., Any]  # from CoreApi, beside it in Lanes

    def _runs(self) -> control.LightRepo:
        from git_lanes.domain import control

        return control.open_repo(self.ctx.store.root, trunk=self.ctx.trunk)

    def _run_state(self, repo: control.LightRepo, run: str) -> tuple[str, str, RunState]:
        from git_lanes.domain import control

        run_id = control.resolve_run(repo, run)
        head, state = control.read_state(repo, run_id)
        if head is None or state is None:
            raise NotFound(f"no run {run!r}", code="unknown_run", hint=f"list them with {command('run list')}")
        return run_id, head, state

    def run_start(self, agent: str | None = None, *, lane: str | None = None, task: str | None = None,
                  goal: str | None = None, phase: str | None = None,
                  cwd: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Start a run and return it; its id goes in GIT_LANES_RUN for the agent's session. Without `agent`,
        the run works as its task's owner, else as the one live agent assigned to its lane."""
        from git_lanes import ledger
        from git_lanes.domain import control, lanes, runs, tasks, worktrees
        from git_lanes.model.calls import bounded
        from git_lanes.model.text import check_reason

        goal = check_reason(goal, "the goal")
        if goal is not None and not goal.strip():  # asked for and not given: every briefing would show none
            raise UserError("the goal is empty", code="invalid_reason",
                            hint="say what the run is for, or start it without a goal")
        repo = self._runs()
        policy = repo.policy()
        if agent is not None:
            agent = AgentId(agent)
        if lane is not None:
            lanes.lane_head(self.ctx, lane)
        else:
            lane, _ = control.lane_at(repo, str(cwd or os.getcwd()))
        if phase is not None and phase not in policy.phase_names:
            raise UserError(f"unknown phase {quoted(phase)}; the policy has {', '.join(policy.phase_names)}",
                            code="unknown_phase", hint="phases are declared in [budget] phases of .lanes.toml")
        if task is not None or agent is None:
            coordination = ledger.state_at(self.ctx.store, ledger.head(self.ctx.store))
            if task is not None:
                task = tasks.resolve_task(coordination, task)
            if agent is None:
                agent = worktrees.working_agent(coordination, lane, task, self.ctx.now())
        run = random_hex(8)
        event = control.start_event(repo, self.ctx.now(), agent=agent, lane=lane, phase=phase, task=task,
                                    goal=bounded(goal, 1000) if goal else None)
        state, _ = control.transact(repo, run, lambda head, current: [event])
        assert state is not None
        return runs.view(state, policy)

    def run_list(self, *, active: bool = False, budgets: bool = False) -> list[dict[str, Any]]:
        """Runs, newest first; with `budgets`, each with its phase budgets as `run show` gives them (one policy
        read for all, so a dashboard can draw every run's budget bars from one call)."""
        from git_lanes.domain import control

        repo = self._runs()
        policy = repo.policy() if budgets else None
        rows = []
        for run in repo.log.runs():
            _, state = control.read_state(repo, run)
            if state is not None and (not active or state.status == "active"):
                rows.append(_shown(state, policy))
        return sorted(rows, key=lambda r: r["created_at"], reverse=True)

    def run_show(self, run: str) -> dict[str, Any]:
        """One run (by unique id prefix): its state, usage against the budget, and what is in flight."""
        repo = self._runs()
        _, _, state = self._run_state(repo, run)
        return _shown(state, repo.policy())

    def _events(self, repo: control.LightRepo, head: str, stop: str | None = None) -> list[RunEvent]:
        found = []
        for commit, message in repo.log.commits(head):
            if commit == stop:
                break
            found.append(_event_of(commit, message))
        found.reverse()
        return found

    def run_events(self, run: str) -> list[dict[str, Any]]:
        """A run's control-plane log, oldest first: tools attempted, completed and blocked, phase changes, usage."""
        from git_lanes.domain import runs

        repo = self._runs()
        _, head, _ = self._run_state(repo, run)
        return runs.timeline(self._events(repo, head))

    def run_follow(self, run: str, timeout: float | None = None) -> Iterator[dict[str, Any]]:
        """The run's timeline, then each new event as it is appended, until the run ends (or `timeout`)."""
        from git_lanes.domain import control, runs

        repo = self._runs()
        run_id, head, state = self._run_state(repo, run)
        events = self._events(repo, head)
        yield from runs.timeline(events)
        deadline = None if timeout is None else time.monotonic() + timeout
        while state.status != "ended" and (deadline is None or time.monotonic() < deadline):
            time.sleep(FOLLOW_POLL_SECONDS)
            current = repo.log.head(run_id)
            if current is None or current == head:
                continue
            fresh = self._events(repo, current, stop=head)
            rows = runs.timeline(events + fresh)[len(events):]
            events += fresh
            head = current
            _, latest = control.read_state(repo, run_id)
            assert latest is not None
            state = latest
            yield from rows

    def run_phase(self, run: str, phase: str) -> dict[str, Any]:
        """Move run `run` to phase `phase` (one the policy declares); the phase's budget and write gate apply from
        now on."""
        from git_lanes.domain import control, runs
        from git_lanes.model.runs import RunEvent, RunState

        repo = self._runs()
        policy = repo.policy()
        if phase not in policy.phase_names:
            raise UserError(f"unknown phase {quoted(phase)}; the policy has {', '.join(policy.phase_names)}",
                            code="unknown_phase", hint="phases are declared in [budget] phases of .lanes.toml")
        run_id = control.resolve_run(repo, run)

        def step(head: str | None, state: RunState | None) -> list[RunEvent]:
            if state is None:
                raise NotFound(f"no run {run!r}", code="unknown_run")
            if state.status == "ended":
                raise StaleState(f"run {run_id[:8]} has ended", code="run_ended",
                                 hint=f"start a new one with {command('run start')}")
            return [RunEvent("phase", self.ctx.now(), {"phase": phase, "previous": state.phase})]

        state, _ = control.transact(repo, run_id, step)
        assert state is not None
        return runs.view(state, policy)

    def run_end(self, run: str, reason: str | None = None) -> dict[str, Any]:
        """End run `run` (with `reason`); ending an ended run changes nothing (`already_ended`). While a Stop
        hook of its session closes a turn (its snapshot is being made), the end waits in the log for that
        turn's end, which completes it (`ending`): the turn is recorded wholly before the end, never after."""
        from git_lanes.domain import control, runs
        from git_lanes.model.runs import RunEvent, RunState
        from git_lanes.model.text import check_reason
        from git_lanes.store import processes

        reason = check_reason(reason)
        repo = self._runs()
        run_id = control.resolve_run(repo, run)
        host = processes.hostname()

        def step(head: str | None, state: RunState | None) -> list[RunEvent]:
            if state is None:
                raise NotFound(f"no run {run!r}", code="unknown_run")
            return runs.end_events(state, self.ctx.now(), reason, runs.closing(state, host, processes.running))

        state, events = control.transact(repo, run_id, step)
        assert state is not None
        return runs.view(state, repo.policy()) | {"already_ended": state.status == "ended" and not events,
                                                  "pending": state.status != "ended"}

    def run_resume(self, run: str) -> dict[str, Any]:
        """The briefing a new session of `run` starts from (nothing is recorded)."""
        from git_lanes.domain import briefing

        repo = self._runs()
        _, _, state = self._run_state(repo, run)
        return briefing.build(self.ctx, state, repo.policy(), self.ctx.now())

    def run_stats(self, *, by: str = "agent", since: str | None = None) -> dict[str, Any]:
        """Usage per UTC day summed by agent, lane or run (`by`), with totals; with `since` (a moment as git's
        `--since` takes it, model/moments.py), only the days from the one it falls in on."""
        from git_lanes.domain import control, runs
        from git_lanes.model.runs import STATS_GROUPS

        if by not in STATS_GROUPS:
            raise UserError(f"runs are grouped by one of {', '.join(STATS_GROUPS)}, not {quoted(by)}",
                            code="invalid_group")
        if since is not None:
            from git_lanes.model.moments import parse_moment

            since = runs.day_of(parse_moment(since, self.ctx.now()))
        repo = self._runs()
        states = [s for s in (control.read_state(repo, run)[1] for run in repo.log.runs()) if s is not None]
        rows = runs.stats(states, by, since)
        totals = {k: round(sum(r[k] for r in rows), 6) for k in (*runs.DAY_KEYS, "tokens")}
        return {"by": by, "since": since, "rows": rows, "totals": totals}

    # -- the hook steps that need the whole API ---------------------------------------------------------
    def hook_briefing(self, run: str) -> str:
        """The recovery briefing of run `run` as text: what it was doing, what was in flight when it stopped."""
        return str(self.run_resume(run)["text"])

    def _same_as_last(self, path: Any, transition_id: str) -> bool:
        from git_lanes.domain import transitions

        try:
            last = transitions.find(self.ctx, transition_id)
        except LanesError:
            return False
        return last.status == "proposed" and self.ctx.store.content_tree(path) == last.tree

    def hook_snapshot(self, event: HookEvent, state: RunState, mode: str) -> dict[str, Any]:
        """Snapshot the run's workspace as a state of its lane whose intent is the turn's prompt and whose cost
        is the turn's usage (`mode`: propose or accept). Returns what happened, never raises a user error."""
        from git_lanes.domain import lanes
        from git_lanes.model.records import Cost
        from git_lanes.model.runs import Usage
        from git_lanes.model.text import as_reason

        if not state.lane:
            return {"status": "skipped", "reason": "the run has no lane"}
        path, broken = lanes.workspace_state(self.ctx, state.lane)
        if path is None:
            return {"status": "skipped", "reason": broken or f"lane {state.lane} has no workspace here"}
        if state.transitions and self._same_as_last(path, state.transitions[-1]):
            return {"status": "unchanged", "reason": "the workspace still holds the run's last proposal"}
        turn = state.turn or {}
        # the prompt is whatever the person pasted (test output in its colours): written with escapes for its
        # control characters, or the intent would refuse it and the turn's work become no transition
        prompt = as_reason((turn.get("prompt") or "").strip()) or f"agent turn of run {state.id[:8]}"
        try:
            spent = state.usage.minus(Usage.from_dict(turn.get("usage")))
            now = self.ctx.now()
            cost = Cost.capped(tokens_in=spent.input + spent.cache_read + spent.cache_write, tokens_out=spent.output,
                               api_calls=spent.messages, wall_time=round(max(0.0, now - turn.get("started", now)), 3),
                               cost_usd=spent.cost_usd)
            result = self.commit(prompt, state.agent, lane=state.lane, cost=cost, agent_type=state.cli,
                                 model=event.model, tags=(f"run:{state.id[:8]}",), auto_accept=mode == "accept")
        except LanesError as exc:
            return {"status": "failed", "error": exc.code, "message": exc.message}
        return {"status": result.get("status"), "transition": result.get("id"), "lane": state.lane,
                "cost": cost.to_dict()}


def _event_of(commit: str, message: str) -> RunEvent:
    from git_lanes.model.runs import RunEvent

    _, _, body = message.partition("\n\n")
    try:
        return RunEvent.from_dict(json.loads(body))
    except ValueError:
        raise UnsupportedFormat(f"run commit {commit[:8]} holds no event",
                                hint="the run log was written by something else") from None


def _shown(state: RunState, policy: Policy | None) -> dict[str, Any]:
    """A run as `run show` and `run list` give it: its record (`status` is active until it ends), with
    `state`, what it is doing as `ps` says it (a stopped run is "stopped", not "active")."""
    from git_lanes.domain import runs, spawning
    from git_lanes.store import processes

    return runs.view(state, policy) | {"state": spawning.condition(state, processes.hostname(), processes.running)}
