"""`git lanes run …`: the control plane's runs: start one, watch its log, move its phase, end it, brief a
new session on it, and count what runs spent."""

from __future__ import annotations

import json
import sys
import time

import click

from git_lanes.cli import SuggestingGroup
from git_lanes.cli.agent import agent_option
from git_lanes.cli.output import fail, json_option, open_api, run, shown, table
from git_lanes.errors import LanesError


@click.group(name="run", cls=SuggestingGroup)
def run_group() -> None:
    """Runs: one agent's piece of work, metered and recorded by the agent hooks.

    Each run's log is `refs/lanes/runs/<run>` (read it with `git log`); budgets, spend and the resume
    briefing are computed from it. A hook call from a session with no run starts one itself; set
    GIT_LANES_RUN to a started run's id to put a session in it.

    \b
    Example:
      export GIT_LANES_RUN=$(git lanes run start --agent coder-1 --goal "Add login")
      git lanes run show $GIT_LANES_RUN
    """


def _clock(moment: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(moment)) if moment else "-"


def render_run(r: dict) -> str:
    lines = [f"run {r['id']}  {r['state']}  agent {r['agent']}  lane {r['lane'] or '-'}  task "
             f"{(r['task'] or '-')[:8]}  phase {r['phase']}",
             f"goal: {r['goal'] or '-'}",
             f"started {_clock(r['created_at'])}, last event {_clock(r['updated_at'])}, {r['events']} events, "
             f"{r['sessions']} sessions"]
    budget = r.get("budget") or {}
    rows = [["phase", "budget", "spent", "left"]] + [
        [("* " if name == r["phase"] else "  ") + name, "-" if b["budget"] is None else f"{b['budget']:g}",
         f"{b['spent']:g}", "-" if b["left"] is None else f"{b['left']:g}"] for name, b in budget.items()]
    lines.append(table(rows))
    lines.append(f"calls {r['calls']} (blocked {r['blocked']}, completed {r['completed']}, failed {r['failed']}); "
                 f"tokens {sum(r['tokens'].values())} (in {r['tokens']['input']}, out {r['tokens']['output']}, "
                 f"cache {r['tokens']['cache_read']}+{r['tokens']['cache_write']}); cost ${r['cost_usd']:.4f}")
    lines += _pipeline_lines(r.get("pipeline") or {})
    if r["plan"]:
        lines.append("plan:")
        lines += [f"  [{s.get('status', '?')}] {s.get('step', '')}" for s in r["plan"]]
    for label, key in (("in flight", "in_flight"), ("interrupted (previous session)", "interrupted")):
        if r[key]:
            lines.append(f"{label}:")
            lines += [f"  {f['tool']} {f['input']} ({f['id']})" for f in r[key]]
    return "\n".join(lines)


def _pipeline_lines(pipeline: dict) -> list[str]:
    """Where a spawned pipeline stands (stage and status, fix attempts, why it stopped) and the stages it
    went through, each as it ended."""
    if not pipeline:
        return []
    fixes = int(pipeline.get("fixes") or 0)
    where = f"{pipeline['stage']} {pipeline.get('status')}" if pipeline.get("stage") else pipeline.get("status")
    line = f"pipeline: {where}" + (f", after {fixes} fix attempt{'s' if fixes != 1 else ''}" if fixes else "")
    if pipeline.get("status") in ("blocked", "error", "stopped") and pipeline.get("reason"):
        line += f": {pipeline['reason']}"
    path = [f"{h['stage']} {h['status']}" for h in pipeline.get("history") or () if h.get("status") != "started"]
    return [line] + (["  " + " -> ".join(path)] if path else [])


@run_group.command()
@agent_option(required=False,
              help_text="The agent doing the work (default: the task's owner, else the lane's live agent).")
@click.option("--lane", metavar="LANE", help="The lane it works in (default: the workspace you are in).")
@click.option("--task", metavar="TASK", help="The ledger task it works on (a unique prefix will do).")
@click.option("--goal", metavar="TEXT", help="What the run is for, shown in every briefing.")
@click.option("--phase", metavar="PHASE", help="The phase to start in (default: the policy's first).")
@json_option
def start(agent: str | None, lane: str | None, task: str | None, goal: str | None, phase: str | None,
          as_json: bool) -> None:
    """Start a run and print its id.

    \b
    Example:
      export GIT_LANES_RUN=$(git lanes run start --agent coder-1 --lane feature/auth --goal "Add login")
    """
    run(lambda: open_api().run_start(agent, lane=lane, task=task, goal=goal, phase=phase), as_json,
        lambda r: r["id"])


@run_group.command(name="list")
@click.option("--active", is_flag=True, help="Only runs that have not ended.")
@json_option
def list_(active: bool, as_json: bool) -> None:
    """List runs, newest first.

    \b
    Example:
      git lanes run list --active
    """
    def render(rows: list[dict]) -> str:
        return table([[r["id"][:8], r["state"], r["agent"], r["lane"] or "-", r["phase"],
                       f"{r['calls']} calls", f"{r['blocked']} blocked", f"${r['cost_usd']:.2f}",
                       (r["goal"] or "")[:40]] for r in rows]) or "no runs"

    run(lambda: open_api().run_list(active=active), as_json, render)


@run_group.command()
@click.argument("run_id", metavar="RUN")
@json_option
def show(run_id: str, as_json: bool) -> None:
    """Show a run: goal, task, lane, phase, budget per phase, where its pipeline stands (spawn --pipeline),
    plan, in-flight calls, tokens and cost.

    \b
    Example:
      git lanes run show 3fa2c1
    """
    run(lambda: open_api().run_show(run_id), as_json, render_run)


def _event_line(e: dict) -> str:
    detail = {k: v for k, v in e.items() if k not in ("type", "time", "seq", "elapsed", "delta", "format")}
    text = " ".join(f"{k}={v}" if not isinstance(v, (dict, list)) else f"{k}={json.dumps(v)}"
                    for k, v in detail.items() if k not in ("transcript",))
    return f"{e['seq']:>4}  {_clock(e['time'])}  +{e['elapsed']:.3f}s  (+{e['delta']:.3f}s)  {e['type']:<15} {text}"


@run_group.command()
@click.argument("run_id", metavar="RUN")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events until the run ends.")
@json_option
def events(run_id: str, follow: bool, as_json: bool) -> None:
    """Print a run's whole timeline with per-event timing (since start, since the previous event, and each
    tool's duration). With --json, one JSON record per line when following, else one JSON list.

    \b
    Example:
      git lanes run events 3fa2c1 --follow
    """
    if not follow:
        run(lambda: open_api().run_events(run_id), as_json,
            lambda rows: "\n".join(_event_line(e) for e in rows))
        return

    try:
        for event in open_api().run_follow(run_id):
            click.echo(json.dumps(event, sort_keys=True) if as_json else shown(_event_line(event)))
    except LanesError as exc:
        fail(exc, as_json)
    except KeyboardInterrupt:
        sys.exit(130)


@run_group.command()
@click.argument("run_id", metavar="RUN")
@click.argument("phase", metavar="PHASE")
@json_option
def phase(run_id: str, phase: str, as_json: bool) -> None:
    """Move a run to PHASE (one of the policy's phases). Each phase has its own step budget; what a phase
    spent stays spent, so moving back and forth buys nothing.

    \b
    Example:
      git lanes run phase 3fa2c1 execute
    """
    run(lambda: open_api().run_phase(run_id, phase), as_json,
        lambda r: f"run {r['id'][:8]} is in phase {r['phase']} "
                  f"({r['budget'][r['phase']]['left']:g} step units left)")


@run_group.command()
@click.argument("run_id", metavar="RUN")
@click.option("--reason", metavar="TEXT", help="Why it ended (kept in the log).")
@json_option
def end(run_id: str, reason: str | None, as_json: bool) -> None:
    """End a run: its hooks admit no more tool calls and record nothing more but what its session still spends
    (the daily limit counts it). Ending an ended run changes nothing. While a Stop hook of its session records
    a turn (its snapshot), the run ends as that turn's end is recorded, so the turn is wholly in the run before
    the end.

    \b
    Example:
      git lanes run end 3fa2c1 --reason "merged"
    """
    run(lambda: open_api().run_end(run_id, reason), as_json,
        lambda r: f"run {r['id'][:8]} " + ("had already ended" if r["already_ended"] else
                                           "ends once the turn its Stop hook is recording is in" if r["pending"]
                                           else "ended"))


@run_group.command()
@click.argument("run_id", metavar="RUN")
@click.option("--spawn", "respawn", is_flag=True,
              help="Start the spawned run's agent again from the briefing (a pipeline goes on with its stage).")
@json_option
def resume(run_id: str, respawn: bool, as_json: bool) -> None:
    """Print the briefing a new session of the run starts from: goal, task and dependencies, phase and
    budget, plan, the calls in flight when it stopped, what landed on disk, unread posts, claim overlaps
    and whether the trunk moved (with the paths that would collide).

    With --spawn, a run started by `git lanes spawn` that was killed, stopped or blocked starts again: its
    agent gets the briefing, and a pipeline continues with the stage it was in, never from the start.

    \b
    Example:
      git lanes run resume 3fa2c1 > briefing.md
      git lanes run resume 3fa2c1 --spawn
    """
    if not respawn:
        run(lambda: open_api().run_resume(run_id), as_json, lambda r: r["text"])
        return
    from git_lanes.cli import supervise
    from git_lanes.cli.spawn import hook_prefix, render_spawned

    run(lambda: open_api().run_resume_spawn(run_id, hook_prefix=hook_prefix(), supervisor=supervise.argv), as_json,
        render_spawned)


@run_group.command()
@click.option("--by", "by", type=click.Choice(["agent", "lane", "run", "task", "day"]), default="agent",
              show_default=True, help="How to group.")
@click.option("--since", metavar="DATE", help="Count only the UTC days from the one DATE falls in on; DATE as "
                                              "git's --since takes it: 2026-11-01, yesterday, 1.week.ago, "
                                              "@1700000000.")
@json_option
def stats(by: str, since: str | None, as_json: bool) -> None:
    """Calls, blocked calls, tokens, cost and wall time of runs, grouped.

    \b
    Example:
      git lanes run stats --by day --since 2026-11-01
      git lanes run stats --by lane --since 1.week.ago
    """
    def render(r: dict) -> str:
        rows = [[by, "runs", "calls", "blocked", "tokens", "cost", "wall"]] + [
            [str(x[by])[:16], str(x["runs"]), str(x["calls"]), str(x["blocked"]), str(x["tokens"]),
             f"${x['cost_usd']:.4f}", f"{x['wall']:.0f}s"] for x in r["rows"]]
        t = r["totals"]
        rows.append(["total", "", str(t["calls"]), str(t["blocked"]), str(t["tokens"]), f"${t['cost_usd']:.4f}",
                     f"{t['wall']:.0f}s"])
        return table(rows)

    run(lambda: open_api().run_stats(by=by, since=since), as_json, render)
