"""A spawned run's pipeline, driven by its supervisor (`supervise.py`) stage by stage: the agent stages (plan,
execute, fix) each run the agent once; verify runs the trunk's gates on the lane's state, a failure starts a
fix run with the gates' output; ship integrates the lane and marks the task done, then starts the pipelines of
the tasks that were waiting for it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.api.supervise import OUTPUT_CHARS, Outcome
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, GateFailed, LanesError
from git_lanes.model.ids import Actor, TransitionId

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import control, pipeline
    from git_lanes.model.launch import Launch
    from git_lanes.model.records import Transition
    from git_lanes.model.runs import RunState


def _plain(result: Any) -> dict[str, Any]:
    return result.to_dict() if hasattr(result, "to_dict") else dict(result or {})


@held
class PipelineApi:
    ctx: Context
    _read: Callable[[control.LightRepo, str], RunState]
    _task_record: Callable[[str | None], dict[str, Any] | None]
    _run_agent: Callable[[control.LightRepo, str, str | None, str], Outcome]
    _append_run: Callable[..., RunState]
    _states: Callable[[control.LightRepo], list[RunState]]
    _state: Callable[[], ledger.State]
    _writing: Callable[[], AbstractContextManager[Context]]
    _followers_supervisor: Callable[[str], list[str]] | None
    commit: Callable[..., Any]  # records (Decided | Unchanged, Promoted | ...) read like their JSON
    promote: Callable[..., Any]
    run_phase: Callable[[str, str], dict[str, Any]]
    run_end: Callable[..., dict[str, Any]]
    run_resume: Callable[[str], dict[str, Any]]
    task_done: Callable[..., Any]
    task_block: Callable[..., Any]
    board_post: Callable[..., Any]
    spawn: Callable[..., dict[str, Any]]

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
