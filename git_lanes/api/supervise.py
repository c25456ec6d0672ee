"""The supervisor: the process that drives one spawned run. It waits for a slot under `[agent] max_parallel`,
launches the agent command in the lane's workspace (its own process group, output to the run's log file),
watches it (a spent budget stops it; the agent's lease is kept alive) and records how it ended; a pipeline's
stages are driven by `pipeline.py`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, GateFailed, LanesError, Refused, StaleState, command, problem
from git_lanes.model.frozen import Frozen

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import control, lanes, pipeline, spawning, tasks
    from git_lanes.domain.agents import SYSTEM
    from git_lanes.model.launch import Launch, render
    from git_lanes.model.runs import RunEvent, RunState
    from git_lanes.store import lock, processes
    from git_lanes.store.gitcli import unredirected_env

SLOT_LOCK = "lanes-spawn.lock"
WATCH_SECONDS = 0.2
SLOT_POLL_SECONDS = 0.2
HEARTBEAT_SECONDS = 60.0
TAIL_BYTES = 2000
OUTPUT_CHARS = 4000


class Outcome(Frozen):
    """How an agent process ended: its exit code or signal, or why it was stopped (or never started)."""

    code: int | None = None
    signal: int | None = None
    stopped: str | None = None
    budget: bool = False
    error: str | None = None


@held
class SuperviseApi:
    ctx: Context
    _runs: Callable[[], control.LightRepo]
    _run_state: Callable[..., tuple[str, str, RunState]]
    _append_run: Callable[..., RunState]
    _live_runs: Callable[[control.LightRepo], list[RunState]]
    _row: Callable[[RunState, str], dict[str, Any]]
    _state: Callable[[], ledger.State]
    run_end: Callable[..., dict[str, Any]]
    run_resume: Callable[[str], dict[str, Any]]
    lane_env: Callable[[str], dict[str, Any]]
    touch_agent: Callable[[str], Any]
    _followers_supervisor: Callable[[str], list[str]] | None = None
    _adopting = False  # this process is a child subreaper: the agent's orphans are re-parented to it
    _drive_pipeline: Callable[[control.LightRepo, str], None]  # the pipeline's stages (pipeline.py)

    def supervise(self, run: str, *, supervisor: Callable[[str], list[str]] | None = None) -> dict[str, Any]:
        """Drive the spawned run `run` until its agent (or pipeline) is finished, stopped or blocked. A
        following pipeline starts the runs its done task made ready with `supervisor` (their supervisor's argv)."""
        from git_lanes.domain import spawning
        from git_lanes.model.runs import RunEvent
        from git_lanes.store import processes

        self._followers_supervisor = supervisor
        repo = self._runs()
        run_id, _, state = self._run_state(repo, run)
        if not state.launch:
            raise Refused(f"run {run_id[:8]} was not started by {command('spawn')}", code="not_spawned")
        if state.status == "ended":
            raise StaleState(f"run {run_id[:8]} has ended", code="run_ended")
        host, me = processes.hostname(), os.getpid()
        if spawning.supervised(state, host, processes.running) and state.supervisor.get("pid") != me:
            raise Conflict(f"run {run_id[:8]} already has a supervisor (pid {state.supervisor.get('pid')})",
                           code="run_running")
        # Orphans of the agent's (a daemon's double fork) are re-parented here, where `stop` and `_end_agent`
        # find them, instead of to init.
        self._adopting = processes.adopt_orphans()
        self._append_run(repo, run_id, RunEvent("supervisor", self.ctx.now(), {
            "pid": me, "ticks": processes.start_ticks(me), "host": host}))
        try:
            if state.launch.get("pipeline"):
                self._drive_pipeline(repo, run_id)
            else:
                self._drive_plain(repo, run_id)
        finally:
            self._end_leftover(repo, run_id)
            self._append_run(repo, run_id, RunEvent("supervisor", self.ctx.now(), {"pid": me, "status": "ended"}))
        final = self._read(repo, run_id)
        refused = spawning.refused_slot(final)
        if refused is not None:
            raise refused
        row = self._row(final, host)
        return row | {"problem": _unfinished(row)}

    def _read(self, repo: control.LightRepo, run: str) -> RunState:
        from git_lanes.domain import control

        _, state = control.read_state(repo, run)
        assert state is not None
        return state

    def _task_record(self, task: str | None) -> dict[str, Any] | None:
        from git_lanes.domain import tasks

        if not task:
            return None
        try:
            return tasks.get_task(self._state(), task)
        except LanesError:
            return None

    # -- one agent process ------------------------------------------------------------------------------
    def _run_agent(self, repo: control.LightRepo, run: str, stage: str | None, prompt: str) -> Outcome:
        from git_lanes.domain import lanes, spawning
        from git_lanes.model.launch import render
        from git_lanes.model.runs import RunEvent
        from git_lanes.store import processes
        from git_lanes.store.gitcli import unredirected_env

        state = self._read(repo, run)
        launch = spawning.load_launch(self.ctx)
        cli = state.launch["cli"]
        workspace = lanes.require_workspace(self.ctx, state.lane) if state.lane else Path(state.launch["workspace"])
        files = repo.log.files(run)
        files.mkdir(parents=True, exist_ok=True)
        prompt_file = files / f"prompt-{state.sessions + 1}.txt"
        prompt_file.write_text(prompt + "\n")
        values = {"prompt": prompt, "prompt_file": str(prompt_file), "lane": state.lane or "",
                  "workspace": str(workspace), "run": run, "task": state.task or "", "agent": state.agent}
        argv = render(launch.command(cli), values)
        lane_env = self.lane_env(state.lane)["env"] if state.lane else {}  # the lane's [setup] env: its ports
        env = spawning.agent_env(unredirected_env(), run=run, agent=state.agent, lane=state.lane or "",
                                 workspace=workspace, task=state.task, extra=lane_env | launch.env.get(cli, {}))
        log = Path(state.launch["log"])
        import shlex  # here: every command loads this module (a mixin of Lanes), few launch an agent

        header = f"=== git-lanes: run {run[:8]}{f' stage {stage}' if stage else ''}: {shlex.join(argv[:1])} " \
                 f"in {workspace} ===\n"
        try:
            started = self._take_slot(repo, run, launch, stage, lambda: processes.launch(argv, workspace, env, log,
                                                                                         header))
        except processes.LaunchFailed as exc:
            self._append_run(repo, run, RunEvent("agent_exited", self.ctx.now(), {
                "pid": None, "stage": stage, "error": exc.message}))
            return Outcome(error=exc.message)
        if started is None:
            return Outcome(stopped=self._read(repo, run).stop.get("reason") or "stopped while queued")
        return self._watch(repo, run, started, stage, launch, log)

    def _take_slot(self, repo: control.LightRepo, run: str, launch: Launch, stage: str | None,
                   start: Callable[[], processes.Started]) -> processes.Started | None:
        """Launch the agent once fewer than `max_parallel` agents run here, counting and launching under
        one lock so that concurrent supervisors never overshoot; None when a stop came while queued."""
        from git_lanes.model.runs import RunEvent
        from git_lanes.store import lock, processes

        queued = False
        while True:
            with lock.exclusive(repo.common_dir / SLOT_LOCK):
                state = self._read(repo, run)
                if state.stop:
                    return None
                live = [s for s in self._live_runs(repo) if s.id != run]
                if len(live) < launch.max_parallel:
                    started = start()
                    self._append_run(repo, run, RunEvent("agent_started", self.ctx.now(), {
                        "pid": started.pid, "pgid": started.pid, "ticks": started.ticks,
                        "host": processes.hostname(), "stage": stage}))
                    return started
                if not state.launch.get("queue") and not (state.exit or state.sessions):
                    # its spawn (without --queue) found a slot, then another spawn took it first: refused
                    # as the spawn's own check refuses, never queued (spawn says so and exits 3)
                    reason = f"{len(live)} agents run already, [agent] max_parallel is {launch.max_parallel}"
                    self._append_run(repo, run, RunEvent("stopped", self.ctx.now(), {
                        "reason": reason, "by": "git-lanes", "signal": None,
                        "refused": {"live": len(live), "max_parallel": launch.max_parallel}}))
                    return None
                if not queued:
                    self._append_run(repo, run, RunEvent("queued", self.ctx.now(), {
                        "live": len(live), "max_parallel": launch.max_parallel}))
                    queued = True
            time.sleep(SLOT_POLL_SECONDS)

    def _watch(self, repo: control.LightRepo, run: str, started: processes.Started, stage: str | None,
               launch: Launch, log: Path) -> Outcome:
        from git_lanes.domain.agents import SYSTEM
        from git_lanes.model.runs import RunEvent
        from git_lanes.store import processes

        import subprocess  # here: every command loads this module (a mixin of Lanes), few watch an agent

        process = started.process
        assert process is not None
        beat = time.monotonic()
        budget_stop = False
        spent_since: float | None = None
        while True:
            try:
                process.wait(timeout=WATCH_SECONDS)
                break
            except subprocess.TimeoutExpired:
                pass
            state = self._read(repo, run)
            spent = [key for key, level in state.alerts.items() if level == "exhausted"]
            if spent and spent_since is None:
                spent_since = time.monotonic()
            if spent and spent_since is not None and not state.stop and time.monotonic() - spent_since >= launch.stop_grace:
                # warn, pause, stop: the hooks deny its writes and blocked its task when the budget ran out;
                # after the grace period (time to sum up) the agent itself ends.
                self._append_run(repo, run, RunEvent("stop_requested", self.ctx.now(), {
                    "reason": f"the budget of {spent[0].replace(':', ' ', 1)} is spent", "by": SYSTEM,
                    "budget": True}))
                budget_stop = True
                self._end_agent(run, started.pid, launch.stop_grace)
            if time.monotonic() - beat >= HEARTBEAT_SECONDS:
                beat = time.monotonic()
                try:
                    self.touch_agent(state.agent)
                except LanesError:
                    pass
        code = process.returncode
        # Whatever the agent left running (a server it started, in its group or out of it) ends with it.
        self._end_agent(run, started.pid, launch.stop_grace)
        tail, _ = processes.read_from(log, max(0, log.stat().st_size - TAIL_BYTES) if log.exists() else 0)
        self._append_run(repo, run, RunEvent("agent_exited", self.ctx.now(), {
            "pid": started.pid, "code": code if code >= 0 else None, "signal": -code if code < 0 else None,
            "stage": stage, "tail": tail.decode("utf-8", "replace")[-TAIL_BYTES:]}))
        stop = self._read(repo, run).stop
        return Outcome(code if code >= 0 else None, -code if code < 0 else None,
                       stop.get("reason") if stop else None, budget_stop or bool(stop.get("budget")))

    def _end_leftover(self, repo: control.LightRepo, run: str) -> None:
        """The supervisor is going (done, or told to end): no agent of its run outlives it."""
        from git_lanes.domain import spawning
        from git_lanes.model.runs import RunEvent
        from git_lanes.store import processes

        state = self._read(repo, run)
        if spawning.is_live(state, processes.hostname(), processes.running):
            self._end_agent(run, int(state.process["pgid"]), spawning.load_launch(self.ctx).stop_grace)
            self._append_run(repo, run, RunEvent("agent_exited", self.ctx.now(), {
                "pid": state.process.get("pid"), "stage": state.process.get("stage"),
                "error": "its supervisor ended"}))

    def _end_agent(self, run: str, pid: int, grace: float) -> str:
        """End the agent process `pid` (its group's leader) and every process of its run: its group, what is
        below it, below this supervisor once it adopts orphans, or carries the run's mark."""
        from git_lanes.domain import spawning
        from git_lanes.store import processes

        roots = (pid, os.getpid()) if self._adopting else (pid,)
        return processes.end_run(pid, grace, roots, spawning.mark(run), spawning.fence(run))

    # -- a spawn without the pipeline ---------------------------------------------------------------
    def _drive_plain(self, repo: control.LightRepo, run: str) -> None:
        from git_lanes.domain import pipeline

        state = self._read(repo, run)
        resume = bool(state.exit or state.sessions or state.calls)
        briefing = self.run_resume(run)["text"] if resume else None
        text = pipeline.plain_prompt(state, self._task_record(state.task), state.launch.get("text"), briefing)
        outcome = self._run_agent(repo, run, None, text)
        if outcome.stopped is None and outcome.code == 0:
            self.run_end(run, "the agent finished")


def _unfinished(row: dict[str, Any]) -> dict[str, Any] | None:
    """What a person must settle when the supervisor is done but the run is not: the pipeline blocked by the
    trunk's gates (exit 4), or an agent that failed, was stopped or ran out of budget (exit 1)."""
    if row.get("status") == "ended":
        return None
    run = str(row["run"])[:8]
    if row.get("stage") == "verify" and row.get("pipeline_status") == "blocked":
        return problem(GateFailed(f"run {run}: the trunk's gates still fail after the fix attempts; its task is "
                                  "blocked with a question on the board",
                                  hint=f"fix the lane, then {command('task resume')} and "
                                       f"{command('run resume', run, spawn=True)}"))
    return problem(Refused(f"run {run} is {row.get('state')}, not finished",
                           code="run_unfinished", hint=f"{command('logs', run)} says why; "
                                                       f"{command('run resume', run, spawn=True)} carries on"))
