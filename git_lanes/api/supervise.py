"""The supervisor: the process that drives one spawned run. It waits for a slot under `[agent] max_parallel`,
launches the agent command in the lane's workspace (its own process group, output to the run's log file),
watches it (a spent budget stops it; the agent's lease is kept alive), records how it ended, and for a
pipeline goes on through the stages: verify runs the trunk's gates on the lane's state, a failure starts a
fix run with the gates' output, and ship integrates the lane and marks the task done."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, GateFailed, LanesError, Refused, problem
from git_lanes.model.frozen import Frozen
from git_lanes.model.ids import Actor, TransitionId

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import control, gates, lanes, pipeline, spawning, tasks, transitions
    from git_lanes.domain.agents import SYSTEM
    from git_lanes.model.launch import Launch, render
    from git_lanes.model.records import Intent, Transition
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


def _plain(result: Any) -> dict[str, Any]:
    return result.to_dict() if hasattr(result, "to_dict") else dict(result or {})


class SuperviseApi:
    ctx: Context
    _runs: Callable[[], control.LightRepo]
    _run_state: Callable[..., tuple[str, str, RunState]]
    _append_run: Callable[..., RunState]
    _live_runs: Callable[[control.LightRepo], list[RunState]]
    _row: Callable[[RunState, str], dict[str, Any]]
    _state: Callable[[], ledger.State]
    _writing: Callable[[], AbstractContextManager[Context]]
    commit: Callable[..., Any]  # records (Decided | Unchanged, Promoted | ...) read like their JSON
    promote: Callable[..., Any]
    run_phase: Callable[[str, str], dict[str, Any]]
    run_end: Callable[..., dict[str, Any]]
    run_resume: Callable[[str], dict[str, Any]]
    lane_env: Callable[[str], dict[str, Any]]
    touch_agent: Callable[[str], Any]
    task_done: Callable[..., Any]
    task_block: Callable[..., Any]
    board_post: Callable[..., Any]
    spawn: Callable[..., dict[str, Any]]
    _states: Callable[[control.LightRepo], list[RunState]]
    _followers_supervisor: Callable[[str], list[str]] | None = None

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
            raise Refused(f"run {run_id[:8]} was not started by `git lanes spawn`", code="not_spawned")
        if state.status == "ended":
            raise Refused(f"run {run_id[:8]} has ended", code="run_ended")
        host, me = processes.hostname(), os.getpid()
        if spawning.supervised(state, host, processes.running) and state.supervisor.get("pid") != me:
            raise Conflict(f"run {run_id[:8]} already has a supervisor (pid {state.supervisor.get('pid')})",
                           code="run_running")
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
                processes.end_group(started.pid, launch.stop_grace)
            if time.monotonic() - beat >= HEARTBEAT_SECONDS:
                beat = time.monotonic()
                try:
                    self.touch_agent(state.agent)
                except LanesError:
                    pass
        code = process.returncode
        # Whatever the agent left running in its group (a server it started) ends with it.
        processes.end_group(started.pid, launch.stop_grace)
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
            processes.end_group(int(state.process["pgid"]), spawning.load_launch(self.ctx).stop_grace)
            self._append_run(repo, run, RunEvent("agent_exited", self.ctx.now(), {
                "pid": state.process.get("pid"), "stage": state.process.get("stage"),
                "error": "its supervisor ended"}))

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

    # -- the pipeline ------------------------------------------------------------------------------
    def _stage(self, repo: control.LightRepo, run: str, stage: str, status: str, **data: Any) -> RunState:
        from git_lanes.model.runs import RunEvent

        return self._append_run(repo, run, RunEvent("pipeline", self.ctx.now(), {
            "stage": stage, "status": status, **{k: v for k, v in data.items() if v is not None}}))

    def _enter(self, repo: control.LightRepo, run: str, stage: str) -> None:
        from git_lanes.domain import pipeline

        state = self._read(repo, run)
        phase = pipeline.phase_for(stage, repo.policy())
        if phase is not None and phase != state.phase:
            self.run_phase(run, phase)

    def _drive_pipeline(self, repo: control.LightRepo, run: str) -> None:
        from git_lanes.domain import pipeline, spawning

        launch = spawning.load_launch(self.ctx)
        state = self._read(repo, run)
        current = state.pipeline or {}
        if current.get("stage") is not None and current.get("status") in pipeline.OPEN:
            self._stage(repo, run, current["stage"], "resumed")
        while True:
            state = self._read(repo, run)
            step = pipeline.next_step(state, launch.fix_attempts)
            if step.kind == "finished":
                self.run_end(run, "the pipeline shipped")
                return
            if step.kind == "blocked":
                self._block(repo, run, launch.fix_attempts)
                return
            assert step.stage is not None
            self._enter(repo, run, step.stage)
            if step.kind == "agent":
                if not self._agent_stage(repo, run, step, launch):
                    return
            elif step.kind == "verify":
                self._stage(repo, run, "verify", "started")
                verdict = self._verify(repo, run)
                self._stage(repo, run, "verify", "passed" if verdict["passed"] else "failed", verify=verdict)
            else:
                self._stage(repo, run, "ship", "started")
                shipped = self._ship(repo, run)
                if not shipped["shipped"]:
                    self._stage(repo, run, "ship", "blocked", reason=shipped["reason"], ship=shipped)
                    return
                if self._read(repo, run).launch.get("follow"):
                    shipped = shipped | {"followed": self._follow(repo, run)}
                self._stage(repo, run, "ship", "done", ship=shipped)

    def _agent_stage(self, repo: control.LightRepo, run: str, step: pipeline.Step, launch: Launch) -> bool:
        """Run one agent stage; whether the pipeline goes on."""
        from git_lanes.domain import pipeline

        stage = step.stage or "execute"
        if not step.resume:
            self._stage(repo, run, stage, "started")
        state = self._read(repo, run)
        briefing = self.run_resume(run)["text"] if step.resume else None
        text = pipeline.prompt(step, state, self._task_record(state.task), fix_attempts=launch.fix_attempts,
                               briefing=briefing, extra=state.launch.get("text"))
        outcome = self._run_agent(repo, run, stage, text)
        if outcome.budget:
            self._stage(repo, run, stage, "blocked", reason=outcome.stopped)
            return False
        if outcome.stopped is not None:
            self._stage(repo, run, stage, "stopped", reason=outcome.stopped)
            return False
        if outcome.error is not None or outcome.code != 0:
            why = outcome.error or (f"the agent exited with code {outcome.code}" if outcome.code is not None
                                    else f"the agent was killed by signal {outcome.signal}")
            self._stage(repo, run, stage, "error", reason=why)
            return False
        plan = list(self._read(repo, run).plan) if stage == "plan" else None
        self._stage(repo, run, stage, "done", plan=plan)
        return True

    def _candidate(self, state: RunState) -> Transition:
        """The lane's state to verify: the run's last proposal when the workspace still holds it, else a
        snapshot of the workspace now, else (nothing changed) the lane's head."""
        from git_lanes.domain import lanes, transitions
        from git_lanes.model.records import Intent, Transition

        assert state.lane is not None
        path = lanes.require_workspace(self.ctx, state.lane)
        if state.transitions:
            try:
                last = transitions.find(self.ctx, state.transitions[-1])
            except LanesError:
                last = None
            if last is not None and last.status == "proposed" and self.ctx.store.content_tree(path) == last.tree:
                return last
        result = self.commit(f"Verify {state.goal or 'the lane'}", state.agent, lane=state.lane,
                             agent_type=state.cli, tags=(f"run:{state.id[:8]}", "pipeline:verify"))
        if result.get("status") != "unchanged":
            return transitions.find(self.ctx, result["id"])
        head = lanes.lane_head(self.ctx, state.lane)
        return transitions.load(self.ctx, head) or Transition(
            id=TransitionId(head[:16]), lane=state.lane, base=None, state=head, tree=self.ctx.store.tree_of(head),
            status="accepted", intent=Intent(prompt=f"lane {state.lane} as it is", agent_id=Actor(state.agent)))

    def _verify(self, repo: control.LightRepo, run: str) -> dict[str, Any]:
        """Run the trunk's gates (those judging a commit on the lane or a promotion into the trunk) on the
        lane's state; accept the state when they pass, reject it (kept as signal) when a required one fails."""
        from git_lanes.domain import gates

        state = self._read(repo, run)
        try:
            record = self._candidate(state)
        except LanesError as exc:
            return {"passed": False, "transition": None, "gates": [],
                    "failed": [{"gate": "snapshot", "exit_code": None, "output": exc.message}]}
        chosen = tuple(g for g in gates.load(self.ctx)
                       if g.guards("commit", record.lane) or g.guards("promote", self.ctx.trunk))
        evaluations = gates.evaluate(self.ctx, record, chosen) if chosen else ()
        failed = gates.failures(evaluations)
        if record.status == "proposed":
            try:
                with self._writing() as ctx:
                    gates.decide_raced(ctx, record, evaluations)
            except GateFailed:
                pass
            except Conflict as exc:
                return {"passed": False, "transition": record.id, "gates": [],
                        "failed": [{"gate": "decide", "exit_code": None, "output": exc.message}]}
        return {"passed": not failed, "transition": record.id, "state": record.state,
                "gates": [{"gate": e.gate, "passed": e.passed, "required": e.required, "exit_code": e.exit_code}
                          for e in evaluations],
                "failed": [{"gate": e.gate, "exit_code": e.exit_code, "output": e.output_tail[-OUTPUT_CHARS:]}
                           for e in failed]}

    def _ship(self, repo: control.LightRepo, run: str) -> dict[str, Any]:
        """Promote the lane into the trunk through the merge gate (a task in a ticket is left to `task done`,
        which integrates it into the ticket), then mark the task done."""
        state = self._read(repo, run)
        record = self._task_record(state.task)
        if record is not None and record["status"] == "done":
            return {"shipped": True, "already": True}
        promoted = None
        if state.lane and state.lane != self.ctx.trunk and not (record or {}).get("ticket"):
            try:
                report = self.promote(state.lane, prompt=f"Ship {state.goal or state.lane}", agent_id=state.agent,
                                      agent_type=state.cli, tags=(f"run:{state.id[:8]}", "pipeline:ship"),
                                      auto_accept=True)
            except LanesError as exc:
                return {"shipped": False, "reason": exc.message, "error": exc.code}
            transition = report.get("transition") or {}
            if report["status"] not in ("accepted", "up_to_date"):
                return {"shipped": False, "error": "promotion_held", "transition": transition.get("id"),
                        "reason": f"the promotion of {state.lane} into {self.ctx.trunk} waits for a person "
                                  f"({report['status']})"}
            promoted = {"into": self.ctx.trunk, "status": report["status"], "transition": transition.get("id"),
                        "state": transition.get("to")}
        try:
            done = _plain(self.task_done(state.task, state.agent))
        except LanesError as exc:
            return {"shipped": False, "reason": exc.message, "error": exc.code, "promoted": promoted}
        return {"shipped": True, "promoted": promoted, "integrated": done.get("integrated"),
                "now_ready": done.get("now_ready")}

    def _follow(self, repo: control.LightRepo, run: str) -> list[dict[str, Any]]:
        """Spawn a following pipeline for each task that depends on this run's (done) task, is ready now and
        has no spawned run going: foundation first, then the features, queued for `[agent] max_parallel`.
        Read from the ledger, not from what `task done` answered, so a supervisor killed in between and resumed
        still starts them, and never twice. A refusal (the spend gate, a spent budget) is recorded, not raised."""
        from git_lanes.domain import tasks

        state = self._read(repo, run)
        ledger_state = self._state()
        if not state.task:
            return []
        going = {s.task for s in self._states(repo) if s.launch and s.task and s.status != "ended"}
        followed = []
        for dependent in tasks.get_task(ledger_state, state.task).get("dependents") or []:
            record = tasks.get_task(ledger_state, dependent)
            if record["status"] == "done" or dependent in going or not tasks.is_ready(ledger_state, record):
                continue
            try:
                spawned = self.spawn(dependent, agent=record.get("owner"), cli=state.launch.get("cli"),
                                     use_pipeline=True, queue=True, follow=True,
                                     hook_prefix=str(state.launch["hook_prefix"]),
                                     supervisor=self._followers_supervisor)
            except LanesError as exc:
                followed.append({"task": dependent, "error": exc.code, "message": exc.message})
                continue
            followed.append({"task": dependent, "run": spawned["run"], "lane": spawned["lane"]})
        return followed

    def _block(self, repo: control.LightRepo, run: str, fix_attempts: int) -> None:
        """Verify still fails after the fix attempts: block the task and ask a person on the board."""
        from git_lanes.domain import pipeline

        state = self._read(repo, run)
        record = self._task_record(state.task)
        reason = f"the trunk's gates still fail after {fix_attempts} fix attempt(s)"
        post = None
        if record is not None:
            try:
                self.task_block(record["id"], reason, state.agent)
            except LanesError:
                pass  # already blocked: the question still goes up
            try:
                post = _plain(self.board_post(pipeline.question(state, record, fix_attempts), state.agent,
                                              kind="question")).get("post")
            except LanesError:
                post = None
        self._stage(repo, run, "verify", "blocked", reason=reason, post=post)


def _unfinished(row: dict[str, Any]) -> dict[str, Any] | None:
    """What a person must settle when the supervisor is done but the run is not: the pipeline blocked by the
    trunk's gates (exit 4), or an agent that failed, was stopped or ran out of budget (exit 1)."""
    if row.get("status") == "ended":
        return None
    run = str(row["run"])[:8]
    if row.get("stage") == "verify" and row.get("pipeline_status") == "blocked":
        return problem(GateFailed(f"run {run}: the trunk's gates still fail after the fix attempts; its task is "
                                  "blocked with a question on the board",
                                  hint=f"fix the lane, then `git lanes task resume` and `git lanes run resume {run} "
                                       "--spawn`"))
    return problem(Refused(f"run {run} is {row.get('state')}, not finished",
                           code="run_unfinished", hint=f"`git lanes logs {run}` says why; `git lanes run resume {run} "
                                                       "--spawn` carries on"))
