"""Setting a lane's workspace up from the trunk's `[setup]` (git_lanes/model/lane_setup.py): copy the ignored
files it names from the main worktree, fill in its variables, run its command. The command may run for
minutes, so callers run this outside the writers' lock; a failure is reported and the lane kept."""

from __future__ import annotations

from pathlib import Path

from git_lanes.domain import lanes
from git_lanes.domain.context import Context
from git_lanes.model import config
from git_lanes.model.lane_setup import Setup, SetupReport, SetupRun, invalid
from git_lanes.model.refs import flat_name
from git_lanes.store import lane_files, scratch

LOG_DIR = ".lanes/setup"


def load(ctx: Context) -> Setup:
    """The `[setup]` of `.lanes.toml` at the trunk's committed head (a lane cannot change its own setup)."""
    head = lanes.lane_head(ctx, ctx.trunk)
    text = ctx.store.read_path(ctx.store.tree_of(head), config.CONFIG)
    return Setup.from_config(config.parse(text, invalid)) if text is not None else Setup()


def log_path(ctx: Context, lane: str) -> Path:
    return ctx.store.root / LOG_DIR / f"{flat_name(lane)}.log"


def environment(ctx: Context, setup: Setup, lane: str, workspace: Path, ports: tuple[int, ...]) -> dict[str, str]:
    return setup.render_env(lane=lane, ports=ports, workspace=str(workspace), root=str(ctx.store.root),
                            trunk=ctx.trunk)


def apply(ctx: Context, setup: Setup, lane: str, workspace: Path, ports: tuple[int, ...]) -> SetupReport:
    """Copy, fill in and run. Takes no lock."""
    env = environment(ctx, setup, lane, workspace, ports)
    problems = []
    try:
        copied = lane_files.copy_files(ctx.store.root, workspace, setup.copy)
    except OSError as exc:
        copied = lane_files.Copied()
        problems.append(f"copying failed: {exc}")
    run = None
    if setup.run is not None:
        command = setup.run if isinstance(setup.run, str) else list(setup.run)
        log = log_path(ctx, lane)
        result = scratch.run_command(command, workspace, setup.timeout,
                                     {**env, "GIT_LANES_LANE": lane, "GIT_LANES_WORKSPACE": str(workspace)}, log)
        run = SetupRun(setup.run, result.exit_code, result.duration, result.timed_out, str(log), result.output_tail)
        if not run.passed:
            why = f"timed out after {setup.timeout:g}s" if result.timed_out else \
                f"exited {result.exit_code}" if result.exit_code is not None else "could not start"
            problems.append(f"the setup command {why}; its output is in {log}")
    try:  # as the setup left them (its command may fill them in), so that a removal can tell them from edits
        lane_files.remember_copies(workspace, copied.copied)
    except OSError as exc:
        problems.append(f"recording the copies failed: {exc}")
    return SetupReport(lane, "failed" if problems else "ok", ports, env, tuple(copied.copied), tuple(copied.absent),
                       tuple(copied.present), run, "; ".join(problems) or None, tracked(ctx, lane, copied.present))


def changed_copies(ctx: Context, workspace: Path) -> list[str]:
    """The ignored files `[setup] copy` put in `workspace` that were changed there since (work no state
    holds, which removing the workspace would lose)."""
    return lane_files.changed_copies(workspace)


def tracked(ctx: Context, lane: str, paths: list[str]) -> tuple[str, ...]:
    """Which of the paths `copy` found already in the workspace git tracks in the lane: never copied (the
    lane's own version stays), so a `copy` entry naming one is a mistake the person is told of."""
    if not paths:
        return ()
    tree = ctx.store.tree_of(lanes.lane_head(ctx, lane))
    return tuple(path for path in paths if ctx.store.entry_at(tree, path) is not None)
