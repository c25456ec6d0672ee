"""The agents `spawn` started, while they work: list the live ones (`ps`), read their output (`logs`), tell
one something, stop one. Each reads the run's log, where the supervisor records every agent process it
starts and how each ended (api/spawn.py starts them, api/supervise.py drives them)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError, Refused, StaleState, UserError, command
from git_lanes.model.ids import random_hex

if TYPE_CHECKING:
    from git_lanes.domain import control
    from git_lanes.model.runs import RunEvent, RunState

POLL_SECONDS = 0.05
AGENT_LOG = "agent.log"


@held
class RunningApi:
    """Mixed into `Lanes` beside RunsApi (`_runs`, `_run_state`) and BudgetsApi (`budgets_over`)."""

    ctx: Context
    _runs: Callable[[], control.LightRepo]
    _run_state: Callable[[control.LightRepo, str], tuple[str, str, RunState]]
    budgets_over: Callable[[list[tuple[str | None, str | None]]], list[list[dict[str, Any]]]]

    def _states(self, repo: control.LightRepo) -> list[RunState]:
        from git_lanes.domain import control

        found = []
        for run in repo.log.runs():
            try:
                _, state = control.read_state(repo, run)
            except LanesError:
                continue
            if state is not None:
                found.append(state)
        return found

    def _live_runs(self, repo: control.LightRepo) -> list[RunState]:
        from git_lanes.domain import spawning
        from git_lanes.store import processes

        host = processes.hostname()
        return [s for s in self._states(repo) if spawning.is_live(s, host, processes.running)]

    def _row(self, state: RunState, host: str) -> dict[str, Any]:
        from git_lanes.domain import runs, spawning
        from git_lanes.store import processes

        view = runs.view(state)
        live = spawning.is_live(state, host, processes.running)
        supervised = spawning.supervised(state, host, processes.running)
        status = spawning.condition(state, host, processes.running)
        return view | {"run": state.id, "live": live, "supervised": supervised, "state": status,
                       "pid": (state.process or {}).get("pid"), "log": state.launch.get("log"),
                       "stage": (state.pipeline or {}).get("stage"), "pipeline_status": (state.pipeline or {}).get("status")}

    def ps(self, *, everything: bool = False) -> list[dict[str, Any]]:
        """Live agent processes (with `everything`, every spawned run): run, pid, lane, task, stage and phase,
        step budget, the money budgets over its lane, task and ticket, cost, and the last event."""
        from git_lanes.domain import runs
        from git_lanes.store import processes

        repo = self._runs()
        policy = repo.policy()
        host = processes.hostname()
        rows = []
        for state in self._states(repo):
            if not state.launch:
                continue
            row = self._row(state, host)
            if not everything and not (row["live"] or row["supervised"]):
                continue
            head = repo.log.head(state.id)
            summary = next(repo.log.commits(head))[1].split("\n", 1)[0] if head else ""
            budget = runs.budgets(state, policy).get(state.phase, {})
            rows.append(row | {"step_budget": budget, "last_event": summary.split(": ", 1)[-1],
                               "last_event_at": state.updated_at})
        over = self.budgets_over([(r["lane"], r["task"]) for r in rows])
        rows = [r | {"budgets": found} for r, found in zip(rows, over)]
        return sorted(rows, key=lambda r: r["created_at"])

    def logs(self, run: str) -> dict[str, str]:
        """What the agent of spawned run `run` (a unique prefix will do) has written to its output so far,
        with the run's whole id: `{"run", "log"}`."""
        from git_lanes.store import processes

        repo = self._runs()
        run_id = self._spawned(repo, run)
        data, _ = processes.read_from(repo.log.files(run_id) / AGENT_LOG, 0)
        return {"run": run_id, "log": data.decode("utf-8", "replace")}

    def _spawned(self, repo: control.LightRepo, run: str) -> str:
        """The whole id of spawned run `run`. A run its agent's hooks started has no output of its own here (the
        agent CLI's terminal had it): an empty log would read as an agent that said nothing."""
        run_id, _, state = self._run_state(repo, run)
        if not state.launch:
            raise Refused(f"run {run_id[:8]} was not started by {command('spawn')}, so git-lanes holds no output of "
                          "its agent", code="not_spawned",
                          hint=f"its events are in {command('run events', run_id[:8])}")
        return run_id

    def logs_follow(self, run: str, timeout: float | None = None) -> Iterator[dict[str, str]]:
        """The run's agent output so far, then what is appended, until no agent or supervisor of it runs: each
        piece as `{"run", "text"}`, the run named by its whole id."""
        from git_lanes.domain import spawning
        from git_lanes.store import processes

        repo = self._runs()
        run_id = self._spawned(repo, run)
        path = repo.log.files(run_id) / AGENT_LOG
        offset = 0
        host = processes.hostname()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = current_state(repo, run_id)
            running = spawning.supervised(state, host, processes.running) or \
                spawning.is_live(state, host, processes.running)
            data, offset = processes.read_from(path, offset)
            if data:
                yield {"run": run_id, "text": data.decode("utf-8", "replace")}
            if not running or (deadline is not None and time.monotonic() >= deadline):
                data, offset = processes.read_from(path, offset)
                if data:
                    yield {"run": run_id, "text": data.decode("utf-8", "replace")}
                return
            time.sleep(POLL_SECONDS * 4)

    # -- steering ------------------------------------------------------------------------------------
    def tell(self, run: str, message: str, sender: str | None = None) -> dict[str, Any]:
        """Queue `message` for the run's model; its hooks deliver it at the next tool call or stop (a Stop
        hook blocks with it, so the model carries on with it as its instruction)."""
        from git_lanes.domain import control, spawning
        from git_lanes.domain.board import validate_message
        from git_lanes.model.runs import RunEvent, RunState
        from git_lanes.store import processes

        validate_message(message)
        sender = sender or self.ctx.store.signature().name
        repo = self._runs()
        run_id = control.resolve_run(repo, run)
        message_id = random_hex(4)

        def step(head: str | None, state: RunState | None) -> list[RunEvent]:
            if state is None:
                raise LanesError(f"no run {run!r}", code="unknown_run")
            if state.status == "ended":
                raise StaleState(f"run {run_id[:8]} has ended: nobody would read it", code="run_ended")
            return [RunEvent("message", self.ctx.now(), {"id": message_id, "text": message, "from": sender})]

        state, _ = control.transact(repo, run_id, step)
        assert state is not None
        live = spawning.is_live(state, processes.hostname(), processes.running)
        return {"run": run_id, "message": message_id, "queued": len(state.inbox), "live": live}

    def stop(self, run: str, reason: str | None = None, *, grace: float | None = None,
             by: str | None = None) -> dict[str, Any]:
        """End the run's agent: its whole process group, and every process that left it (below the agent or
        its supervisor, or carrying the run's mark in its environment), gets SIGTERM, then SIGKILL after
        `grace` seconds (`[agent] stop_grace`); its supervisor goes too. Why is recorded in the run's log."""
        from git_lanes.domain import spawning
        from git_lanes.model.runs import RunEvent
        from git_lanes.model.text import check_reason
        from git_lanes.store import processes

        reason = check_reason(reason)
        repo = self._runs()
        run_id, _, state = self._run_state(repo, run)
        host = processes.hostname()
        grace = spawning.load_launch(self.ctx).stop_grace if grace is None else grace
        if grace < 0:
            raise UserError("--grace must not be negative", code="invalid_grace")
        if not (spawning.is_live(state, host, processes.running) or spawning.supervised(state, host, processes.running)):
            where = (state.process or state.supervisor).get("host")
            if where and where != host:
                raise Refused(f"run {run_id[:8]} runs on {where}, not here", code="elsewhere",
                              hint=f"stop it on {where}")
            return self._row(state, host) | {"stopped": False, "message": f"run {run_id[:8]} is not running"}
        reason = reason or "stopped by a person"
        by = by or self.ctx.store.signature().name
        self._append_run(repo, run_id, RunEvent("stop_requested", self.ctx.now(), {"reason": reason, "by": by}))
        how = "gone"
        for _ in range(3):  # a supervisor may have started a stage's agent just before it saw the stop
            state = current_state(repo, run_id)
            boss = state.supervisor or {}
            supervised = spawning.supervised(state, host, processes.running)
            if spawning.is_live(state, host, processes.running):
                # the agent's group, and what left it: below the agent or its supervisor (their subreaper),
                # or started with the run's mark in its environment
                roots = (int(state.process["pid"]), *((int(boss["pid"]),) if supervised else ()))
                how = processes.end_run(int(state.process["pgid"]), grace, roots, spawning.mark(run_id),
                                        spawning.fence(run_id))
            if supervised and not processes.wait_gone(int(boss["pid"]), grace):
                processes.end_group(int(boss["pid"]), grace)
            state = current_state(repo, run_id)
            if not spawning.is_live(state, host, processes.running):
                break
        self._append_run(repo, run_id, RunEvent("stopped", self.ctx.now(), {"reason": reason, "by": by,
                                                                           "signal": how}))
        state = current_state(repo, run_id)
        return self._row(state, host) | {"stopped": True, "signal": how, "reason": reason}

    def _append_run(self, repo: control.LightRepo, run: str, *events: RunEvent) -> RunState:
        from git_lanes.domain import control

        state, _ = control.transact(repo, run, lambda head, current: list(events))
        assert state is not None
        return state


def current_state(repo: control.LightRepo, run: str) -> RunState:
    """The run's state as its log holds it now (the run is known to exist)."""
    from git_lanes.domain import control

    _, state = control.read_state(repo, run)
    assert state is not None
    return state
