"""`git lanes spawn`, `ps`, `stop`, `tell`, `logs`: starting agent CLIs in lanes and steering them."""

from __future__ import annotations

import json
import sys
import time

import click

from git_lanes.cli import Command
from git_lanes.cli.options import Finite
from git_lanes.cli.output import fail, json_option, open_api, run, shown, table
from git_lanes.errors import LanesError

CLIS = ["claude", "codex", "gemini", "custom"]


def hook_prefix() -> str:
    from git_lanes.cli.hook import command_prefix

    return command_prefix()


def _age(moment: float | None) -> str:
    if not moment:
        return "-"
    seconds = max(0.0, time.time() - moment)
    return f"{seconds:.0f}s ago" if seconds < 120 else f"{seconds / 60:.0f}m ago"


def render_spawned(r: dict) -> str:
    where = f"lane {r['lane']}" + (f", task {r['task'][:8]}" if r.get("task") else "")
    what = {"running": f"running as pid {r['pid']}", "queued": "queued: waiting for a slot ([agent] max_parallel)",
            "supervising": "starting"}.get(r["state"], r["state"])
    lines = [f"run {r['run'][:8]} ({r['agent']}, {r.get('cli') or '-'}): {what}; {where}"]
    if r.get("stage"):
        lines.append(f"pipeline stage {r['stage']} ({r.get('pipeline_status')})")
    if r.get("log"):
        lines.append(f"log: git lanes logs {r['run'][:8]} --follow   ({r['log']})")
    if r.get("problem"):
        lines.append(r["problem"]["message"] + (f"\nhint: {r['problem']['hint']}" if r["problem"].get("hint") else ""))
    return "\n".join(lines)


@click.command(cls=Command)
@click.argument("task", required=False, metavar="TASK")
@click.option("--prompt", "text", metavar="TEXT", help="What the agent is to do (with a TASK: added to it).")
@click.option("--lane", metavar="LANE", help="The lane to work in (default: the task's, else task/<id> or "
                                             "agent/<agent>); created when missing, reused when present.")
@click.option("--agent", "agent", metavar="ID", help="The agent's id (default: <cli>-<run>).")
@click.option("--cli", "agent_cli", type=click.Choice(CLIS), help="Which agent CLI ([agent] cli; default claude).")
@click.option("--pipeline", "use_pipeline", is_flag=True,
              help="Drive the task through plan, execute, verify, fix and ship.")
@click.option("--queue", is_flag=True, help="Past [agent] max_parallel, wait for a slot instead of refusing.")
@click.option("--phase", metavar="PHASE", help="The phase a spawn without --pipeline starts in (default: the "
                                               "policy's first phase that allows writes).")
@click.option("--wait", "foreground", is_flag=True,
              help="Drive the run in this process and exit when it is done (0 done, 4 blocked by gates).")
@json_option
def spawn(task: str | None, text: str | None, lane: str | None, agent: str | None, agent_cli: str | None,
          use_pipeline: bool, queue: bool, phase: str | None, foreground: bool, as_json: bool) -> None:
    """Start an agent CLI on a TASK or a --prompt in a lane, and return while it works.

    Creates or reuses the lane and its workspace, installs the CLI's hooks there only (Claude Code's
    .claude/settings.local.json, Codex's .codex/hooks.json, Gemini's .gemini/settings.json; your own
    settings are untouched), claims the task, starts a run, and launches `[agent.<cli>] command` of
    .lanes.toml at the trunk in the workspace, in its own process group, with GIT_LANES_AGENT and
    GIT_LANES_RUN set. `{prompt}`, `{prompt_file}`, `{lane}`, `{workspace}`, `{run}`, `{task}` and `{agent}`
    in the command are filled in. Output goes to the run's log (`git lanes logs RUN`).

    Refused past the daily spend limit or a spent budget (exit 1); past `[agent] max_parallel` refused
    (exit 3) unless --queue. With --pipeline the task goes through plan (read-only), execute, verify (the
    trunk's gates), up to `[pipeline] fix_attempts` fix runs, and ship (the lane promoted into the trunk, then
    `task done`).

    \b
    Example:
      git lanes spawn --prompt "Fix the flaky login test" --cli claude
      git lanes spawn 3fa2c1 --pipeline --queue
    """
    from git_lanes.cli import supervise

    # What to spawn on is the command's shape (exit 2); the API refuses the same for its other callers.
    if task is None and text is None:
        raise click.UsageError("say what the agent is to do: a TASK or --prompt TEXT")
    if use_pipeline and task is None:
        raise click.UsageError("--pipeline drives a task: name the TASK")

    def action() -> dict:
        api = open_api()
        result = api.spawn(task, prompt=text, lane=lane, agent=agent, cli=agent_cli, use_pipeline=use_pipeline,
                           queue=queue, phase=phase, hook_prefix=hook_prefix(),
                           supervisor=None if foreground else supervise.argv)
        if foreground:
            return api.supervise(result["run"])
        return result

    run(action, as_json, render_spawned)


def _tightest(budgets: list[dict]) -> str:
    """The budget nearest its limit, as `62% task` (`-` when none is set)."""
    if not budgets:
        return "-"
    tightest = max(budgets, key=lambda b: b["used"])
    return f"{tightest['used']:.0%} {tightest['scope']}"


@click.command(cls=Command)
@click.option("--all", "everything", is_flag=True, help="Every spawned run, not only the live ones.")
@json_option
def ps(everything: bool, as_json: bool) -> None:
    """List live agent processes: run, pid, lane, task, pipeline stage and phase, step budget, the budget
    nearest its limit of those over its lane, task and ticket (`git lanes budget`), cost and the last event.

    \b
    Example:
      git lanes ps
      git lanes ps --all --json
    """
    def render(rows: list[dict]) -> str:
        if not rows:
            return "no agents running" if not everything else "no spawned runs"
        header = [["RUN", "PID", "STATE", "LANE", "TASK", "STAGE/PHASE", "STEPS", "BUDGET", "COST", "LAST EVENT"]]
        body = []
        for r in rows:
            steps = r["step_budget"]
            stage = f"{r['stage']}/{r['phase']}" if r.get("stage") else r["phase"]
            body.append([r["run"][:8], str(r["pid"] or "-"), r["state"], r["lane"] or "-", (r["task"] or "-")[:8],
                         stage, f"{steps.get('spent', 0):g}/{steps.get('budget') if steps.get('budget') is not None else '-'}",
                         _tightest(r["budgets"]), f"${r['cost_usd']:.2f}", f"{r['last_event'][:50]} ({_age(r['last_event_at'])})"])
        return table(header + body)

    run(lambda: open_api().ps(everything=everything), as_json, render)


@click.command(cls=Command)
@click.argument("run_id", metavar="RUN")
@click.option("--reason", metavar="TEXT", help="Why (kept in the run's log).")
@click.option("--grace", type=Finite(min=0), metavar="SECONDS",
              help="Seconds between SIGTERM and SIGKILL (default [agent] stop_grace, 10).")
@json_option
def stop(run_id: str, reason: str | None, grace: float | None, as_json: bool) -> None:
    """Stop a run's agent: its whole process group, and every process that left it (a server started with
    setsid, a daemon), gets SIGTERM, then SIGKILL after the grace period; its supervisor ends too. Why is
    recorded. Stopping a run that is not running changes nothing.

    \b
    Example:
      git lanes stop 3fa2c1 --reason "wrong approach"
    """
    def render(r: dict) -> str:
        if not r["stopped"]:
            return f"run {r['run'][:8]} is not running"
        return f"stopped run {r['run'][:8]} ({r['signal']}): {r['reason']}"

    run(lambda: open_api().stop(run_id, reason, grace=grace), as_json, render)


@click.command(cls=Command)
@click.argument("run_id", metavar="RUN")
@click.argument("message")
@click.option("--from", "sender", metavar="NAME", help="Who is telling (default: your git name).")
@json_option
def tell(run_id: str, message: str, sender: str | None, as_json: bool) -> None:
    """Queue MESSAGE for a run's model. Its hooks deliver it at the next tool call (as context) or when it
    stops (a Stop hook blocks with it, so the model carries on with it as its instruction); a run not
    running gets it when its next session starts.

    \b
    Example:
      git lanes tell 3fa2c1 "Use the existing session helper in auth/session.py"
    """
    run(lambda: open_api().tell(run_id, message, sender), as_json,
        lambda r: f"queued for run {r['run'][:8]}" + ("" if r["live"] else " (not running: delivered when it "
                                                                          "starts again)"))


@click.command(cls=Command)
@click.argument("run_id", metavar="RUN")
@click.option("--follow", "-f", is_flag=True, help="Keep printing until the run's agent and supervisor end.")
@json_option
def logs(run_id: str, follow: bool, as_json: bool) -> None:
    """Print a spawned run's agent output (every session of it, each under a header line).

    \b
    Example:
      git lanes logs 3fa2c1 --follow
    """
    if not follow:
        run(lambda: open_api().logs(run_id), as_json, lambda r: r["log"].rstrip("\n"))
        return
    try:
        for chunk in open_api().logs_follow(run_id):
            if as_json:
                click.echo(json.dumps(chunk))
            else:
                click.echo(shown(chunk["text"]), nl=False)  # the agent's bytes, as `logs` without -f shows them
    except LanesError as exc:
        fail(exc, as_json)
    except KeyboardInterrupt:
        sys.exit(130)
