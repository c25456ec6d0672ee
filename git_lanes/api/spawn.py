"""Running agents, not only watching them: spawn an agent CLI in a lane (hooks wired in, a run started, a
supervisor process driving it), a plan's ready tasks at once, or a stopped run again.

The supervisor is a process of its own (the face passes in how to start one), so `spawn` returns while the
agent works; it records every agent process it starts and how each ended in the run's log, where `ps`,
`stop` (api/running.py) and `run show` read them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.api.running import AGENT_LOG, POLL_SECONDS, current_state
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, LanesError, Refused, StaleState, UserError, command, option
from git_lanes.model.ids import random_hex
from git_lanes.model.text import quoted

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import control
    from git_lanes.model.launch import Launch
    from git_lanes.model.runs import RunState

# How long `spawn` waits for its supervisor to report that the agent started (or is queued for a slot).
REPORT_SECONDS = 60.0
PROMPT_CHARS = 20_000
SUPERVISOR_LOG = "supervisor.log"

Supervisor = Callable[[str], list[str]]


@held
class SpawnApi:
    """Mixed into `Lanes` beside RunsApi (`_runs`, `_run_state`), RunningApi (`_states`, `_live_runs`, `_row`),
    WorktreeApi (`assign_worktree`), LedgerApi (`_state`) and TasksApi (`task_claim`)."""

    ctx: Context
    _runs: Callable[[], control.LightRepo]
    _run_state: Callable[[control.LightRepo, str], tuple[str, str, RunState]]
    _state: Callable[[], ledger.State]
    _states: Callable[[control.LightRepo], list[RunState]]
    _live_runs: Callable[[control.LightRepo], list[RunState]]
    _row: Callable[[RunState, str], dict[str, Any]]
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
            raise StaleState(f"task {record['id'][:8]} is already done", code="task_done")
        if phase is not None and phase not in policy.phase_names:
            raise UserError(f"unknown phase {quoted(phase)}; the policy has {', '.join(policy.phase_names)}",
                            code="unknown_phase", hint="phases are declared in [budget] phases of .lanes.toml")
        run = random_hex(8)
        # Only what was not given defaults: an empty agent or lane given is refused as given.
        agent = validate_agent_id(agent if agent is not None else f"{cli}-{run[:8]}")
        if lane is None:
            lane = (record or {}).get("lane") or (f"task/{record['id'][:8]}" if record else f"agent/{agent}")
        lanes.validate_lane_name(lane)
        spawning.check_spend(policy, self.day_spend(), self.budget_gate(lane=lane, task=record and record["id"]))
        if record is not None and record.get("owner") not in (None, agent) and \
                tasks.owner_alive(state, record, self.ctx.now()):
            raise Conflict(f"task {record['id'][:8]} is {record['status']} by {record['owner']}, whose lease is alive",
                           code="task_claimed", hint=f"spawn as its owner ({option('agent', record['owner'])}), or "
                                                     f"hand it over with {command('task handoff')}")
        if not queue:
            spawning.check_slot(launch, len(self._live_runs(repo)))
        _check_program(launch, cli)  # its program missing: refused before anything is made
        place = self.assign_worktree(agent, lane)
        workspace = place["workspace"]
        # ahead: a spawn on a task not ready yet claims it as it always did (see the report of this change)
        claimed = self.task_claim(record["id"], agent, lane=lane, ahead=True) if record is not None else None
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
        refused = spawning.refused_slot(current_state(repo, run))
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
            raise Refused(f"run {run_id[:8]} was not started by {command('spawn')}, so there is no agent command to "
                          "start again", code="not_spawned",
                          hint=f"start the agent yourself with GIT_LANES_RUN={run_id}; its session is briefed")
        if state.status == "ended":
            raise StaleState(f"run {run_id[:8]} has ended", code="run_ended", hint="spawn a new one")
        host = processes.hostname()
        if spawning.supervised(state, host, processes.running) or spawning.is_live(state, host, processes.running):
            raise Conflict(f"run {run_id[:8]} is running", code="run_running",
                           hint=f"{command('stop', run_id[:8])} first, or {command('logs', run_id[:8], follow=True)}")
        if state.lane:
            spawning.install_hooks(self.ctx, state.lane, lanes.require_workspace(self.ctx, state.lane),
                                   state.launch["cli"], hook_prefix)
        if supervisor is not None:
            self._start_supervisor(repo, run_id, supervisor)
        return self._report(repo, run_id, waiting=supervisor is not None) | {"resumed": True}

    def _start_supervisor(self, repo: control.LightRepo, run: str, supervisor: Supervisor) -> None:
        from git_lanes.domain import spawning
        from git_lanes.store import processes
        from git_lanes.store.gitcli import unredirected_env

        started = processes.launch(supervisor(run), self.ctx.store.root, spawning.supervisor_env(unredirected_env(), run),
                                   repo.log.files(run) / SUPERVISOR_LOG)
        self._supervisor_started = started  # keeps the handle, so a long-lived face reaps it

    def _report(self, repo: control.LightRepo, run: str, *, waiting: bool) -> dict[str, Any]:
        """The run once its supervisor reported: the agent started, queued, or already finished."""
        from git_lanes.store import processes

        deadline = time.monotonic() + REPORT_SECONDS
        boss = getattr(self, "_supervisor_started", None)
        while waiting:
            state = current_state(repo, run)
            if _settled(state) or (boss is not None and boss.process is not None and boss.process.poll() is not None):
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_SECONDS)
        state = current_state(repo, run)
        return self._row(state, processes.hostname())


def _check_program(launch: Launch, cli: str) -> None:
    """Refuse a spawn whose agent program is not there (the CLI not installed, a typo in its command): the
    supervisor would only find out after the lane, the task's claim and the run were made, and say so in
    the run's log alone."""
    from git_lanes.store import processes
    from git_lanes.store.gitcli import unredirected_env

    program = launch.command(cli)[0]
    search_path = launch.env.get(cli, {}).get("PATH", unredirected_env().get("PATH"))
    problem = None if "{" in program else processes.missing_program(program, search_path)
    if problem is not None:
        raise UserError(f"cannot start the {cli} agent: {problem}", code="agent_not_found",
                        hint=f"install it, or name the program to run in [agent.{cli}] command of .lanes.toml and "
                             "commit that on the trunk")


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
