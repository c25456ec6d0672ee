"""`status`, `history`, `show`, `diff`: reading what happened."""

from __future__ import annotations

import click

from git_lanes.cli import Command
from git_lanes.cli.options import limit_option
from git_lanes.cli.output import ATTENTION_HINT, json_option, open_api, run, short, shown_path, table


def _summary(t: dict) -> str:
    return t["intent"]["prompt"].strip().splitlines()[0]


def format_cost(c: dict) -> str:
    return (f"tokens {c['tokens_in']}/{c['tokens_out']}  calls {c['api_calls']}  {c['wall_time']:.1f}s  "
            f"${c['cost_usd']:.4f}")


@click.command(cls=Command)
@json_option
def status(as_json: bool) -> None:
    """Show lanes, workspaces, pending proposals and workspaces with unsnapshotted edits.

    Files a promotion changed while a worktree had unsaved edits there are listed as needing attention:
    merge the promoted version (`git diff` shows your edits against it) and `git add` them.

    \b
    Example:
      git lanes status
    """
    def render(r: dict) -> str:
        rows = [[("* " if lane["trunk"] else "  ") + lane["name"], short(lane["head"]),
                 lane["workspace"] or ("BROKEN" if lane.get("broken") else "(no workspace)"), _counts(lane)]
                for lane in r["lanes"]]
        lines = ["lanes:", table(rows)]
        if r["proposals"]:
            lines.append("pending proposals:")
            lines.append(table([["  " + short(t["id"]), t["lane"], t["intent"]["agent_id"], _summary(t)]
                                for t in r["proposals"]]))
        lines += [f"broken {lane['name']}: {lane['broken']}" for lane in r["lanes"] if lane.get("broken")]
        lines += [f"{u['message']}: {u['hint']}" for u in r.get("interrupted_undos", ())]
        for dirty in r["dirty"]:
            lines.append(f"unsnapshotted in {dirty['lane']}:")
            lines += [f"  {kind:9} {shown_path(path)}" for path, kind in sorted(dirty["paths"].items())]
            if dirty["attention"]:
                lines.append(f"needing attention in {dirty['lane']} after a promotion {ATTENTION_HINT}:")
                lines += [f"  {shown_path(path)}" for path in dirty["attention"]]
        return "\n".join(lines)

    run(lambda: open_api().status(), as_json, render)


def _counts(lane: dict) -> str:
    parts = [f"{len(lane['dirty'])} unsnapshotted" if lane["dirty"] else "",
             f"{len(lane['attention'])} need attention" if lane["attention"] else ""]
    return ", ".join(p for p in parts if p)


@click.command(cls=Command)
@click.option("--lane", metavar="LANE", help="Only this lane's transitions.")
@click.option("--status", "status_", type=click.Choice(["proposed", "accepted", "rejected"]),
              help="Only transitions with this status.")
@click.option("--agent", metavar="AGENT", help="Only this agent's transitions.")
@click.option("--grep", metavar="TEXT", help="Only prompts matching this regular expression (any case).")
@click.option("--tag", metavar="TAG", help="Only transitions tagged TAG.")
@click.option("--since", metavar="DATE", help="Only transitions made since DATE, as git's --since takes it: "
                                              "2.hours.ago, 3 days ago, 2w, yesterday, 2026-12-01 13:00 (UTC "
                                              "unless it names an offset), @1700000000.")
@click.option("--model", metavar="MODEL", help="Only transitions whose model's name contains MODEL (any case).")
@limit_option("Show at most N (totals count all).", type=click.IntRange(min=0))
@json_option
def history(lane: str | None, status_: str | None, agent: str | None, grep: str | None, tag: str | None,
            since: str | None, model: str | None, limit: int | None, as_json: bool) -> None:
    """List transitions newest first with prompt, agent, tags and cost, plus totals.

    \b
    Example:
      git lanes history --lane feature/auth --status rejected -n 20
      git lanes history --grep "login|session" --tag auth --since 3d --model sonnet
      git lanes history --since 2.hours.ago
    """
    def render(r: dict) -> str:
        rows = [[short(t["id"]), t["status"], t["lane"], t["intent"]["agent_id"],
                 ",".join(t["intent"]["tags"]), format_cost(t["cost"]), _summary(t)] for t in r["transitions"]]
        totals = r["totals"]
        counts = ", ".join(f"{n} {s}" for s, n in r["counts"].items() if n)
        return "\n".join(filter(None, [table(rows),
                                       f"total: {totals['count']} transitions ({counts or 'none'})  "
                                       f"{format_cost(totals)}"]))

    run(lambda: open_api().history(lane=lane, status=status_, agent=agent, limit=limit, grep=grep, tag=tag, since=since,
                                   model=model), as_json, render)


@click.command(cls=Command)
@click.argument("state", metavar="STATE")
@limit_option("Show at most N steps.", type=click.IntRange(min=0))
@json_option
def trace(state: str, limit: int | None, as_json: bool) -> None:
    """Show the chain of transitions, promotions and resets that led to STATE (a lane, a transition id or
    any git revision), across lanes, newest first, with their prompts and cost.

    Each step shows its transition id (as `history` and `show` take it). A promotion names the lane it
    brought in; that lane's steps follow beneath it. A reset says which lane was moved onto the state. Plain
    git commits with no transition show as `git`, with their commit id.

    \b
    Example:
      git lanes trace main -n 20
      git lanes trace 3fa2c1d0 --json
    """
    def render(r: dict) -> str:
        rows = []
        for s in r["steps"]:
            cost = f"${s['cost']['cost_usd']:.4f}" if s.get("cost") else ""
            where = s.get("lane") or "-"
            if s["kind"] == "promote":
                where += f" <- {s.get('from_lane')}"
            elif s["kind"] == "reset":
                where += f" onto {s.get('onto')}"
            # the transition's id, as history, status and show name it; a plain git commit has only its own
            rows.append([short(s.get("id") or s["state"]), s["kind"], where, s.get("status") or "", s.get("agent") or "", cost,
                         (s.get("prompt") or "")[:60]])
        t = r["totals"]
        return "\n".join(filter(None, [table(rows), f"{len(r['steps'])} steps across {len(r['lanes'])} lanes, "
                                                     f"{t['transitions']} transitions, {format_cost(t)}"]))

    run(lambda: open_api().trace(state, limit), as_json, render)


@click.command(cls=Command)
@click.argument("transition_id", metavar="ID")
@json_option
def show(transition_id: str, as_json: bool) -> None:
    """Show one transition: its record, intent, cost, evaluations and changed paths.

    \b
    Example:
      git lanes show 3f9c2a1b
    """
    def render(t: dict) -> str:
        intent = t["intent"]
        lines = [f"transition {t['id']} ({t['kind']})", f"status     {t['status']}"
                 + (f" — {t['reason']}" if t.get("reason") else ""),
                 f"lane       {t['lane']}", f"from       {t['from'] or '-'}", f"to         {t['to']}",
                 f"agent      {intent['agent_id']}" + (f" ({intent['agent_type']})" if intent["agent_type"] else "")
                 + (f" model {intent['model']}" if intent["model"] else ""),
                 f"tags       {', '.join(intent['tags']) or '-'}", f"cost       {format_cost(t['cost'])}", "",
                 *["    " + line for line in intent["prompt"].strip().splitlines()], ""]
        for e in t["evaluations"]:
            lines.append(f"gate {e['gate']}: {'passed' if e['passed'] else 'FAILED'} (exit {e['exit_code']}, "
                         f"{e['duration']:.2f}s)")
        lines += [f"  {c['kind']:9} {shown_path(c['path'])}" for c in t["changes"]]
        return "\n".join(lines)

    run(lambda: open_api().show(transition_id), as_json, render)


@click.command(cls=Command)
@click.argument("old", metavar="A")
@click.argument("new", metavar="B")
@click.option("--stat", "mode", flag_value="stat", help="Show a diffstat.")
@click.option("--name-only", "mode", flag_value="name-only", help="Show only the changed paths.")
@json_option
def diff(old: str, new: str, mode: str | None, as_json: bool) -> None:
    """Show the difference between two states (lanes, transition ids or git revisions).

    \b
    Example:
      git lanes diff main feature/auth --stat
    """
    mode = mode or "patch"

    def render(r: dict) -> str:
        if mode == "name-only":
            return "\n".join(shown_path(c["path"]) for c in r["changes"])
        if mode == "stat":
            return r["stat"].rstrip("\n") if r["changes"] else ""  # git prints nothing for no change
        return r["patch"].rstrip("\n")

    run(lambda: open_api().diff(old, new, mode), as_json, render)
