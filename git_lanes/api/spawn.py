"""Running agents, not only watching them: spawn an agent CLI in a lane (hooks wired in, a run started, a
supervisor process driving it), list the live ones, stop one, tell one something, read its output.

The supervisor is a process of its own (the face passes in how to start one), so `spawn` returns while the
agent works; it records every agent process it starts and how each ended in the run's log, where `ps`,
`stop` and `run show` read them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, LanesError, Refused, UserError
from git_lanes.model.ids import random_hex
from git_lanes.model.text import quoted

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import control, lanes, pipeline, runs, spawning, tasks
    from git_lanes.domain.agents import validate_agent_id
    from git_lanes.domain.board import validate_text
    from git_lanes.model.calls import bounded
    from git_lanes.model.launch import check_cli
    from git_lanes.model.runs import RunEvent, RunState
    from git_lanes.store import processes
    from git_lanes.store.gitcli import unredirected_env

# How long `spawn` waits for its supervisor to report that the agent started (or is queued for a slot).
REPORT_SECONDS = 60.0
POLL_SECONDS = 0.05
PROMPT_CHARS = 20_000
AGENT_LOG = "agent.log"
SUPERVISOR_LOG = "supervisor.log"

Supervisor = Callable[[str], list[str]]


def _plain(result: Any) -> dict[str, Any]:
    return result.to_dict() if hasattr(result, "to_dict") else dict(result)


@held
class SpawnApi:
    """Mixed into `Lanes` beside RunsApi (`_runs`, `_run_state`), WorktreeApi (`assign_worktree`), LedgerApi
    (`_state`) and TasksApi (`task_claim`)."""

    ctx: Context
    _runs: Callable[[], control.LightRepo]
    _run_state: Callable[[control.LightRepo, str], tuple[str, str, RunState]]
    _state: Callable[[], ledger.State]
    assign_worktree: Callable[..., Any]  # a WorktreeAssigned, read like its JSON
    task_claim: Callable[..., Any]
    run_resume: Callable[[str], dict[str, Any]]
    budget_gate: Callable[..., list[dict[str, Any]]]
    dispatch_status: Callable[[str], dict[str, Any]]
    budgets_over: Callable[[list[tuple[str | None, str | None]]], list[list[dict[str, Any]]]]
    day_spend: Callable[[], float]

    # -- spawn ---------------------------------------------------------------------------------------
    def spawn(self, task: str | None = None, *, prompt: str | None = None, lane: str | None = None,
              agent: str | None = None, cli: str | None = None, use_pipeline: bool = False, queue: bool = False,
              phase: str | None = None, hook_prefix: str, supervisor: Supervisor | None = None,
              follow: bool = False) -> dict[str, Any]:
        """Start an agent in a lane: create or reuse the lane and its workspace, install the CLI's hooks
        there, claim the task, start a run, and start the supervisor (`supervisor(run)` is its argv), which
        launches the agent command of `.lanes.toml` in the workspace. Without `supervisor` the caller drives
        the run itself with `supervise`. Refused past the spend gate or a spent budget; past `[agent]
        max_parallel` refused (exit 3), or with `queue` waiting in the supervisor for a slot. With `follow` (a
        pipeline), once its task is done the supervisor spawns the tasks that made ready, each following too."""
        from git_lanes.domain import control, lanes, pipeline, spawning, tasks
        from git_lanes.domain.agents import validate_agent_id
        from git_lanes.model.calls import bounded
        from git_lanes.model.launch import check_cli
        from git_lanes.model.runs import RunEvent

        launch = spawning.load_launch(self.ctx)
        repo = self._runs()
        policy = repo.policy()
        cli = check_cli(cli or launch.cli)
        launch.command(cli)  # a CLI without a command is refused before anything is made
        if prompt is not None and not prompt.strip():
            raise UserError("the prompt must not be empty", code="empty_prompt")
        if task is None and prompt is None:
            raise UserError("say what the agent is to do: a TASK or --prompt TEXT", code="nothing_to_do")
        if use_pipeline and task is None:
            raise UserError("--pipeline drives a task: name the TASK", code="pipeline_needs_task")
        state = self._state()
        record = tasks.get_task(state, tasks.resolve_task(state, task)) if task is not None else None
        if record is not None and record["status"] == "done":
            raise Refused(f"task {record['id'][:8]} is already done", code="task_done")
        if phase is not None and phase not in policy.phase_names:
            raise UserError(f"unknown phase {quoted(phase)}; the policy has {', '.join(policy.phase_names)}",
                            code="unknown_phase", hint="phases are declared in [budget] phases of .lanes.toml")
        run = random_hex(8)
        agent = validate_agent_id(agent or f"{cli}-{run[:8]}")
        lane = lane or (record or {}).get("lane") or (f"task/{record['id'][:8]}" if record else f"agent/{agent}")
        lanes.validate_lane_name(lane)
        spawning.check_spend(policy, self.day_spend(), self.budget_gate(lane=lane, task=record and record["id"]))
        if record is not None and record.get("owner") not in (None, agent) and \
                tasks.owner_alive(state, record, self.ctx.now()):
            raise Conflict(f"task {record['id'][:8]} is {record['status']} by {record['owner']}, whose lease is alive",
                           code="task_claimed", hint=f"spawn as its owner with --agent {record['owner']}, or "
                                                     "hand it over with `git lanes task handoff`")
        if not queue:
            spawning.check_slot(launch, len(self._live_runs(repo)))
        place = self.assign_worktree(agent, lane)
        workspace = place["workspace"]
        claimed = self.task_claim(record["id"], agent, lane=lane) if record is not None else None
        hooks = spawning.install_hooks(self.ctx, lane, lanes.require_workspace(self.ctx, lane), cli, hook_prefix)
        start = pipeline.phase_for("plan", policy) if use_pipeline else phase or _writable(policy)
        goal = record["title"] if record else bounded(prompt or "", 1000)
        started = control.start_event(repo, self.ctx.now(), agent=agent, lane=lane, phase=start,
                                      task=record["id"] if record else None, goal=goal, cli=cli)
        log = repo.log.files(run) / AGENT_LOG
        launched = RunEvent("spawn", self.ctx.now(), {
            "cli": cli, "command": list(launch.command(cli)), "pipeline": use_pipeline, "queue": queue,
            "workspace": workspace, "log": str(log), "text": (prompt or "")[:PROMPT_CHARS] or None,
            "settings": hooks.get("settings"), **({"follow": True, "hook_prefix": hook_prefix} if follow else {})})
        control.transact(repo, run, lambda head, current: [started, launched])
        if supervisor is not None:
            self._start_supervisor(repo, run, supervisor)
        report = self._report(repo, run, waiting=supervisor is not None)
        refused = spawning.refused_slot(_current(repo, run))
        if refused is not None:  # lost the last slot to a concurrent spawn: neither task nor lane is kept
            if claimed is not None and not claimed.already and claimed.op:
                self.undo(claimed.op, actor=agent)  # type: ignore[attr-defined]  # OplogApi's
            self.release_worktree(agent, keep_workspace=True)  # type: ignore[attr-defined]  # WorktreesApi's
            raise refused
        return report | {"hooks": hooks, "lane_created": place["created"]}

    def dispatch_spawn(self, plan: str, *, cli: str | None = None, hook_prefix: str,
                       supervisor: Supervisor | None = None) -> list[dict[str, Any]]:
        """Spawn a following pipeline for each task of the dispatched `plan` that is ready, not done and has no
        spawned run going: at first the foundation's alone; each, once done, spawns the features it made ready
        (in the lanes the plan made from the foundation's accepted head), queued for `[agent] max_parallel`.
        A task the spend gate or a spent budget holds back is reported, not raised."""
        status = self.dispatch_status(plan)
        repo = self._runs()
        going = {s.task for s in self._states(repo) if s.launch and s.task and s.status != "ended"}
        spawned = []
        for row in status["tasks"]:
            if row["status"] == "done" or not row["ready"] or row["task"] in going:
                continue
            try:
                result = self.spawn(row["task"], agent=row["owner"], cli=cli, use_pipeline=True, queue=True,
                                    follow=True, hook_prefix=hook_prefix, supervisor=supervisor)
            except LanesError as exc:
                spawned.append({"task": row["task"], "key": row["key"], "error": exc.code, "message": exc.message})
                continue
            spawned.append({"task": row["task"], "key": row["key"], "run": result["run"], "lane": result["lane"],
                            "state": result["state"]})
        return spawned

    def run_resume_spawn(self, run: str, *, hook_prefix: str, supervisor: Supervisor | None = None) -> dict[str, Any]:
        """Start a killed (or stopped, or blocked) spawned run again from its briefing: a pipeline continues
        with the stage it was in, never from the start."""
        from git_lanes.domain import lanes, spawning
        from git_lanes.store import processes

        repo = self._runs()
        run_id, _, state = self._run_state(repo, run)
        if not state.launch:
            raise Refused(f"run {run_id[:8]} was not started by `git lanes spawn`, so there is no agent command to "
                          "start again", code="not_spawned",
                          hint=f"start the agent yourself with GIT_LANES_RUN={run_id}; its session is briefed")
        if state.status == "ended":
            raise Refused(f"run {run_id[:8]} has ended", code="run_ended", hint="spawn a new one")
        host = processes.hostname()
        if spawning.supervised(state, host, processes.running) or spawning.is_live(state, host, processes.running):
            raise Conflict(f"run {run_id[:8]} is running", code="run_running",
                           hint=f"`git lanes stop {run_id[:8]}` first, or `git lanes logs {run_id[:8]} --follow`")
        if state.lane:
            spawning.install_hooks(self.ctx, state.lane, lanes.require_workspace(self.ctx, state.lane),
                                   state.launch["cli"], hook_prefix)
        if supervisor is not None:
            self._start_supervisor(repo, run_id, supervisor)
        return self._report(repo, run_id, waiting=supervisor is not None) | {"resumed": True}

    def _start_supervisor(self, repo: control.LightRepo, run: str, supervisor: Supervisor) -> None:
        from git_lanes.store import processes
        from git_lanes.store.gitcli import unredirected_env

        started = processes.launch(supervisor(run), self.ctx.store.root, unredirected_env(),
                                   repo.log.files(run) / SUPERVISOR_LOG)
        self._supervisor_started = started  # keeps the handle, so a long-lived face reaps it

    def _report(self, repo: control.LightRepo, run: str, *, waiting: bool) -> dict[str, Any]:
        """The run once its supervisor reported: the agent started, queued, or already finished."""
        from git_lanes.store import processes

        deadline = time.monotonic() + REPORT_SECONDS
        boss = getattr(self, "_supervisor_started", None)
        while waiting:
            state = _current(repo, run)
            if _settled(state) or (boss is not None and boss.process is not None and boss.process.poll() is not None):
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_SECONDS)
        state = _current(repo, run)
        return self._row(state, processes.hostname())

    # -- looking at agents ----------------------------------------------------------------------------
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

    def logs(self, run: str) -> str:
        """What the agent of spawned run `run` has written to its output so far."""
        from git_lanes.store import processes

        repo = self._runs()
        run_id, _, state = self._run_state(repo, run)
        data, _ = processes.read_from(repo.log.files(run_id) / AGENT_LOG, 0)
        return data.decode("utf-8", "replace")

    def logs_follow(self, run: str, timeout: float | None = None) -> Iterator[str]:
        """The run's agent output so far, then what is appended, until no agent or supervisor of it runs."""
        from git_lanes.domain import spawning
        from git_lanes.store import processes

        repo = self._runs()
        run_id, _, _ = self._run_state(repo, run)
        path = repo.log.files(run_id) / AGENT_LOG
        offset = 0
        host = processes.hostname()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = _current(repo, run_id)
            running = spawning.supervised(state, host, processes.running) or \
                spawning.is_live(state, host, processes.running)
            data, offset = processes.read_from(path, offset)
            if data:
                yield data.decode("utf-8", "replace")
            if not running or (deadline is not None and time.monotonic() >= deadline):
                data, offset = processes.read_from(path, offset)
                if data:
                    yield data.decode("utf-8", "replace")
                return
            time.sleep(POLL_SECONDS * 4)

    # -- steering ------------------------------------------------------------------------------------
    def tell(self, run: str, message: str, sender: str | None = None) -> dict[str, Any]:
        """Queue `message` for the run's model; its hooks deliver it at the next tool call or stop (a Stop
        hook blocks with it, so the model carries on with it as its instruction)."""
        from git_lanes.domain import control, spawning
        from git_lanes.domain.board import validate_text
        from git_lanes.model.runs import RunEvent, RunState
        from git_lanes.store import processes

        validate_text(message)
        sender = sender or self.ctx.store.signature().name
        repo = self._runs()
        run_id = control.resolve_run(repo, run)
        message_id = random_hex(4)

        def step(head: str | None, state: RunState | None) -> list[RunEvent]:
            if state is None:
                raise LanesError(f"no run {run!r}", code="unknown_run")
            if state.status == "ended":
                raise Refused(f"run {run_id[:8]} has ended: nobody would read it", code="run_ended")
            return [RunEvent("message", self.ctx.now(), {"id": message_id, "text": message, "from": sender})]

        state, _ = control.transact(repo, run_id, step)
        assert state is not None
        live = spawning.is_live(state, processes.hostname(), processes.running)
        return {"run": run_id, "message": message_id, "queued": len(state.inbox), "live": live}

    def stop(self, run: str, reason: str | None = None, *, grace: float | None = None,
             by: str | None = None) -> dict[str, Any]:
        """End the run's agent: its whole process group gets SIGTERM, then SIGKILL after `grace` seconds
        (`[agent] stop_grace`); its supervisor goes too. Why is recorded in the run's log."""
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
            state = _current(repo, run_id)
            if spawning.is_live(state, host, processes.running):
                how = processes.end_group(int(state.process["pgid"]), grace)
            boss = state.supervisor or {}
            if spawning.supervised(state, host, processes.running) and \
                    not processes.wait_gone(int(boss["pid"]), grace):
                processes.end_group(int(boss["pid"]), grace)
            state = _current(repo, run_id)
            if not spawning.is_live(state, host, processes.running):
                break
        self._append_run(repo, run_id, RunEvent("stopped", self.ctx.now(), {"reason": reason, "by": by,
                                                                           "signal": how}))
        state = _current(repo, run_id)
        return self._row(state, host) | {"stopped": True, "signal": how, "reason": reason}

    def _append_run(self, repo: control.LightRepo, run: str, *events: RunEvent) -> RunState:
        from git_lanes.domain import control

        state, _ = control.transact(repo, run, lambda head, current: list(events))
        assert state is not None
        return state


def _settled(state: RunState) -> bool:
    """Whether the run's supervisor has got somewhere since it started: an agent runs or is queued, or it
    already finished, or the pipeline is past its agent stages."""
    boss = state.supervisor or {}
    if not boss:
        return bool(state.stop.get("done"))
    since = float(boss.get("time", 0))
    pipeline_state = state.pipeline or {}
    return bool(state.process or boss.get("queued")
                or float((state.exit or {}).get("time", -1)) >= since
                or (float(pipeline_state.get("updated", -1)) >= since
                    and (pipeline_state.get("stage") in ("verify", "ship")
                         or pipeline_state.get("status") in ("error", "blocked", "done", "stopped"))))


def _writable(policy: Any) -> str:
    """The first phase an agent may write in: where a spawn without the pipeline starts."""
    return str(next((name for name in policy.phase_names if name not in policy.read_only), policy.first_phase))


def _current(repo: control.LightRepo, run: str) -> RunState:
    from git_lanes.domain import control

    _, state = control.read_state(repo, run)
    assert state is not None
    return state

