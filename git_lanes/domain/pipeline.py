"""The task pipeline (flow's plain task): plan → execute → verify → fix → ship, as pure decisions.

Every stage is a `pipeline` event in the run's log (stage, status), so where a pipeline stands is a fold of
its log, and a pipeline killed at any point continues from the stage it was in, never from the start:

- plan: an agent session in the policy's read-only `plan` phase (the hooks deny writes); its plan steps (its
  todo tool) are recorded with the stage's end;
- execute: a session in `execute` that runs until the agent stops;
- verify: the trunk's gates on the lane's state (no agent);
- fix: after a failed verify, a session whose prompt carries the failing gates' output, at most
  `[pipeline] fix_attempts` times; then the task is blocked with a question on the board;
- ship: the lane is promoted into the trunk (a ticket's task is integrated by `task done`), the task is
  done, and the run ends.

An agent that exits with an error stops the pipeline (status `error`); `stop` stops it; both, and a blocked pipeline, resume
with `git lanes run resume RUN --spawn`."""

from __future__ import annotations

from dataclasses import dataclass

from git_lanes.errors import command
from git_lanes.model.policy import Policy
from git_lanes.model.runs import RunState

AGENT_STAGES = ("plan", "execute", "fix")
STAGES = ("plan", "execute", "verify", "fix", "ship")
# Statuses of a stage that did not get to its end: a killed pipeline was `started`, a stopped one `stopped`, an
# agent that exited with an error `error`; a blocked one waits for a person. Each goes on with its stage.
OPEN = ("started", "stopped", "error", "blocked", "resumed")
OUTPUT_CHARS = 6000


@dataclass(frozen=True)
class Step:
    """What the pipeline does next: run an agent for a stage, verify, ship, or nothing (finished, blocked)."""

    kind: str  # "agent", "verify", "ship", "blocked", "finished"
    stage: str | None = None
    resume: bool = False  # an agent stage that was cut short: its session starts from the briefing


def next_step(state: RunState, fix_attempts: int) -> Step:
    pipeline = state.pipeline or {}
    stage, status = pipeline.get("stage"), pipeline.get("status")
    if stage is None:
        return Step("agent", "plan")
    if status in OPEN:
        # A blocked verify that a person answered looks again before fixing again.
        return Step("agent", stage, resume=True) if stage in AGENT_STAGES else Step(stage, stage)
    if stage == "plan":
        return Step("agent", "execute")
    if stage in ("execute", "fix"):
        return Step("verify", "verify")
    if stage == "verify":
        if status == "passed":
            return Step("ship", "ship")
        if int(pipeline.get("fixes", 0)) < fix_attempts:
            return Step("agent", "fix")
        return Step("blocked", "verify")
    return Step("finished", "ship")


def phase_for(stage: str, policy: Policy) -> str | None:
    """The policy phase a stage runs in: its namesake, and for a fix `fix` when the policy declares it (its own
    step budget), else `execute`. None when the policy has no such phase (the run's phase stays)."""
    names = policy.phase_names
    wanted = ("fix", "execute") if stage == "fix" else (stage,)
    return next((name for name in wanted if name in names), None)


def _task_lines(task: dict | None, goal: str | None) -> list[str]:
    if task is None:
        return [f"Goal: {goal}"] if goal else []
    lines = [f"Task {task['id'][:8]}: {task['title']}"]
    if task.get("description"):
        lines.append(task["description"].strip())
    return lines


def prompt(step: Step, state: RunState, task: dict | None, *, fix_attempts: int, briefing: str | None = None,
           extra: str | None = None) -> str:
    """What the agent of an agent stage is told. Each prompt names its stage on a line of its own."""
    stage = step.stage or "execute"
    lines = [f"Stage: {stage}" + (" (resumed)" if step.resume else ""), *_task_lines(task, state.goal)]
    if extra:
        lines.append(extra.strip())
    if stage == "plan":
        lines.append("Read the code and write a numbered plan of the steps with your todo tool. Do not change "
                     "project files: this phase is read-only and the hooks deny writes. End your turn when the "
                     "plan is ready.")
    elif stage == "execute":
        steps = [s.get("step", "") for s in state.plan if s.get("step")]
        if steps:
            lines.append("The plan:")
            lines += [f"  {number}. {text}" for number, text in enumerate(steps, 1)]
        lines.append("Carry out the plan in this workspace. Stop when the work is done; the trunk's gates verify "
                     "it after you.")
    else:
        attempt = max(1, int((state.pipeline or {}).get("fixes", 0)))  # counted when the fix stage started
        verify = (state.pipeline or {}).get("verify") or {}
        lines.append(f"Fix attempt {attempt} of {fix_attempts}: the trunk's gates failed on this lane's state.")
        for failure in verify.get("failed") or []:
            lines.append(f"Gate {failure.get('gate')} (exit {failure.get('exit_code')}) said:")
            lines.append(str(failure.get("output") or "").strip()[-OUTPUT_CHARS:])
        lines.append("Fix what they report, in this workspace. Stop when done; the gates run again after you.")
    if step.resume and briefing:
        lines += ["", "This stage was cut short. Reconcile with the briefing before redoing anything:", briefing]
    return "\n".join(lines)


def plain_prompt(state: RunState, task: dict | None, text: str | None, briefing: str | None = None) -> str:
    """The prompt of a spawn without the pipeline: the task, the person's text, and on a resume the briefing."""
    lines = [*_task_lines(task, None if text else state.goal)]
    if text:
        lines.append(text.strip())
    if briefing:
        lines += ["", "You are resuming this run. Reconcile with the briefing before redoing anything:", briefing]
    return "\n".join(lines)


def question(state: RunState, task: dict, fix_attempts: int) -> str:
    """The board question a blocked pipeline asks a person."""
    verify = (state.pipeline or {}).get("verify") or {}
    gates = ", ".join(f.get("gate", "?") for f in verify.get("failed") or []) or "?"
    return (f"task {task['id'][:8]} \"{task['title']}\" is blocked: the trunk's gates ({gates}) still fail on lane "
            f"{state.lane} after {fix_attempts} fix attempt(s). How should it go on? Fix the lane by hand or "
            f"change the task, then {command('task resume', task['id'][:8])} and "
            f"{command('run resume', state.id[:8], spawn=True)}.")
