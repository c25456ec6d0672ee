"""Spawning agents: the decisions around starting an agent CLI in a lane. Where its hooks go (the lane's
workspace only, never the person's own settings), the environment it gets, which runs count as live agents,
and the gates in front of a spawn: the spend gate, the budgets, and `[agent] max_parallel`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from git_lanes.domain import hook_settings, lanes
from git_lanes.domain.context import Context
from git_lanes.domain.wording import dollars
from git_lanes.errors import Conflict, Refused, command, option
from git_lanes.model import config
from git_lanes.model.launch import Launch, invalid
from git_lanes.model.policy import Policy
from git_lanes.model.runs import RunState

# Each CLI's project-level settings file in a workspace. Claude Code's `settings.local.json` is its personal,
# never-committed file; the others are the only project files those CLIs read hooks from.
SETTINGS_FILES = {"claude": ".claude/settings.local.json", "codex": ".codex/hooks.json",
                  "gemini": ".gemini/settings.json"}
# The run every process of a spawned agent belongs to, in its environment (inherited by all it starts, a
# daemon that left the agent's process group too), so `stop` finds them all. Not GIT_LANES_RUN: a person's
# shell may carry that one, and `stop` must not end the shell it was typed in.
MARK = "GIT_LANES_SPAWNED"
# The run a supervisor drives, in its environment and so in its agent's: where a run's process tree meets
# another's (a spawn its agent made has its own supervisor below this one), the value changes.
SUPERVISOR = "GIT_LANES_SUPERVISOR"


def load_launch(ctx: Context) -> Launch:
    """The `[agent]` and `[pipeline]` tables of `.lanes.toml` at the trunk's committed head (defaults without)."""
    text = ctx.store.read_path(ctx.store.tree_of(lanes.lane_head(ctx, ctx.trunk)), config.CONFIG)
    return Launch.from_toml(config.parse(text, invalid)) if text is not None else Launch()


def install_hooks(ctx: Context, lane: str, workspace: Path, cli: str, prefix: str) -> dict[str, Any]:
    """Put the control plane's hooks for `cli` into the lane's workspace, merged into that CLI's project
    settings there, and keep that file out of the lane's states (the repository's exclude list). A settings
    file the lane tracks is never edited: it must carry the hooks already (committed on the trunk)."""
    relative = SETTINGS_FILES.get(cli)
    if relative is None:
        return {"cli": cli, "settings": None, "added": [], "note": "a custom CLI gets no hooks installed"}
    path = workspace / relative
    tracked = ctx.store.read_path(ctx.store.tree_of(lanes.lane_head(ctx, lane)), relative) is not None
    if tracked:
        found = hook_settings.inspect(path, cli)
        if found["missing"]:
            raise Refused(f"lane {lane} tracks {relative}, which lacks the git-lanes hooks for "
                          f"{', '.join(found['missing'])}; spawn never edits a tracked settings file",
                          code="settings_tracked",
                          hint=f"run {command('install', cli)} in the main worktree and commit {relative} on the "
                               "trunk, then spawn again")
        return {"cli": cli, "settings": str(path), "added": [], "tracked": True}
    result = hook_settings.install(path, cli, prefix)
    ctx.store.exclude("/" + relative)
    return result


def agent_env(base: dict[str, str], *, run: str, agent: str, lane: str, workspace: Path, task: str | None,
              extra: dict[str, str]) -> dict[str, str]:
    """The agent's environment: the caller's, the CLI's `[agent.<cli>] env`, and who and where it is."""
    env = dict(base) | extra | {"GIT_LANES_AGENT": agent, "GIT_LANES_RUN": run, "GIT_LANES_LANE": lane,
                                "GIT_LANES_WORKSPACE": str(workspace), MARK: run, SUPERVISOR: run}
    if task:
        env["GIT_LANES_TASK"] = task
    return env


def mark(run: str) -> bytes:
    """The environment entry that marks a process as one of run `run`'s (see MARK)."""
    return f"{MARK}={run}".encode()


def supervisor_env(base: dict[str, str], run: str) -> dict[str, str]:
    """The environment of run `run`'s supervisor: without the mark of the run whose agent spawned it, if one
    did, and naming its own run (`fence`), so that stopping that run leaves this other run alone."""
    return {name: value for name, value in base.items() if name != MARK} | {SUPERVISOR: run}


def fence(run: str) -> bytes:
    """The environment entry of run `run`'s supervisor and its agent; another value of it begins another run."""
    return f"{SUPERVISOR}={run}".encode()


def is_live(state: RunState, host: str, running: Any) -> bool:
    """Whether the run's agent process runs now, on this machine (`running(pid, ticks)` asks the OS)."""
    process = state.process or {}
    return bool(process) and process.get("host") == host and running(process.get("pid"), process.get("ticks"))


def supervised(state: RunState, host: str, running: Any) -> bool:
    """Whether a supervisor of this run runs now, on this machine."""
    boss = state.supervisor or {}
    return bool(boss) and boss.get("host") == host and running(boss.get("pid"), boss.get("ticks"))


def condition(state: RunState, host: str, running: Any) -> str:
    """What a run is doing, as `ps`, `run show` and `run list` say it: its agent process is `running`, it is
    `queued` or `supervising` under a supervisor here, it has `ended`, `git lanes stop` `stopped` it, its agent
    `exited`, or else it is `active` (no agent process of its own: a session's hooks drive it). A stopped or
    exited run has not ended: a supervisor or a session may take it up again."""
    if is_live(state, host, running):
        return "running"
    if supervised(state, host, running):
        return "queued" if state.supervisor.get("queued") else "supervising"
    if state.status == "ended":
        return "ended"
    return "stopped" if state.stop.get("done") else "exited" if state.exit else state.status


def done_at(state: RunState, host: str, running: Any) -> float | None:
    """When the run was done with, for gc: when it ended, or when `git lanes stop` stopped its agent, if
    nothing of it runs now (no supervisor takes a stopped run up again by itself); for a spawned run whose
    agent exited, whatever its exit status, or died with its supervisor, when it was last heard of, since
    nothing takes it up again either (`run resume --spawn` is a person's call, as after a stop). None while it
    may go on, and for a run a process on another machine may still drive."""
    if state.status == "ended":
        return float(state.ended_at or 0.0)
    shown = condition(state, host, running)
    if shown == "stopped":
        return float(state.stop.get("time") or state.updated_at)
    if state.launch and shown in ("exited", "active") and (state.exit or state.process or state.supervisor) \
            and all(not record or record.get("host") == host for record in (state.process, state.supervisor)):
        # A process recorded here and not running is gone; one recorded elsewhere cannot be told from here.
        # A spawn with none recorded yet (its supervisor about to say so) has not got going.
        return float(state.updated_at)
    return None


def check_spend(policy: Policy, day_usd: float, exhausted: list[dict]) -> None:
    """The spend gate in front of a spawn: today's spend against `[spend] usd_per_day`, and the budgets of
    the lane, task and ticket it would work on. Waiting does not help here, so it refuses."""
    if policy.usd_per_day is not None and day_usd >= policy.usd_per_day - 1e-9:
        raise Refused(f"the daily spend limit is reached: runs cost {dollars(day_usd)} today of "
                      f"{dollars(policy.usd_per_day)} (usd_per_day); nothing is spawned", code="spend_limit",
                      hint="raise [spend] usd_per_day in .lanes.toml on the trunk, or wait for tomorrow (UTC)")
    if exhausted:
        spent = "; ".join(f"{b['scope']} {b['key']}: {b['detail']}" for b in exhausted)
        raise Refused(f"the budget is spent ({spent}); nothing is spawned", code="budget_exhausted",
                      hint=f"raise it with {command('budget set')}, or clear it with {command('budget clear')}")


def check_slot(launch: Launch, live: int) -> None:
    if live >= launch.max_parallel:
        raise no_slot(live, launch.max_parallel)


def no_slot(live: int, max_parallel: int) -> Conflict:
    return Conflict(f"{live} agents run already, [agent] max_parallel is {max_parallel}",
                    code="max_parallel", details={"live": live, "max_parallel": max_parallel},
                    hint=f"wait for one to finish ({command('ps')}), or spawn with {option('queue')} to wait for a "
                         "slot")


def refused_slot(state: RunState) -> Conflict | None:
    """A spawn without --queue whose supervisor found every slot taken when it came to launch (another spawn
    got there between this one's check and its launch): refused, as the check would have refused it."""
    refusal = (state.stop or {}).get("refused")
    if not isinstance(refusal, dict):
        return None
    return no_slot(int(refusal.get("live") or 0), int(refusal.get("max_parallel") or 0))
