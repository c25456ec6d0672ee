"""`git lanes agent …`: register agents, keep their leases alive, list them. Also the `--agent` option the
coordination commands share."""

from __future__ import annotations

import time

import click

from git_lanes.cli import SuggestingGroup
from git_lanes.cli.options import agent_option
from git_lanes.cli.output import json_option, open_api, render_overlaps, run, table

__all__ = ["agent", "agent_option", "render_overlaps"]


def ago(moment: float | None) -> str:
    if moment is None:
        return "-"
    delta = moment - time.time()
    minutes = abs(delta) / 60
    text = f"{minutes:.0f}m" if minutes >= 1 else f"{abs(delta):.0f}s"
    return f"in {text}" if delta >= 0 else f"{text} ago"


@click.group(cls=SuggestingGroup)
def agent() -> None:
    """Register agents and keep their leases alive.

    An agent's lease (15 minutes) is extended by register, heartbeat, claiming a task or files and
    publishing its dirty set; a task whose owner's lease lapsed is open to others again.

    \b
    Example:
      git lanes agent register coder-1 --kind claude --lane feature/auth
      git lanes agent heartbeat coder-1
    """


def _which(agent_id: str | None, agent: str | None) -> str:
    """ID as an argument, or --agent / GIT_LANES_AGENT like every other command that acts as an agent."""
    chosen = agent_id if agent_id is not None else agent  # an empty ID given is refused as given, not replaced
    if chosen is None:
        raise click.UsageError("name the agent: ID, --agent ID or GIT_LANES_AGENT")
    return chosen


@agent.command()
@click.argument("agent_id", metavar="[ID]", required=False)
@click.option("--kind", metavar="KIND", help="What sort of agent this is (default: agent).")
@click.option("--lane", metavar="LANE", help="The lane this agent works in (its dirty set is computed there).")
@agent_option(required=False, help_text="The agent, when ID is not given.")
@json_option
def register(agent_id: str | None, kind: str | None, lane: str | None, agent: str | None, as_json: bool) -> None:
    """Register agent ID (or update it), starting its lease.

    Posts to everyone sent before an agent's first call do not flood in; posts sent to it directly do.

    \b
    Example:
      git lanes agent register coder-1 --kind claude --lane feature/auth
    """
    def render(r: dict) -> str:
        verb = "registered" if r["registered"] else "updated"
        return f"{verb} {r['agent']} (kind {r['kind']}, lane {r['lane'] or '-'}), lease until {ago(r['lease_until'])}"

    who = _which(agent_id, agent)
    run(lambda: open_api().agent_register(who, kind, lane), as_json, render)


@agent.command()
@click.argument("agent_id", metavar="[ID]", required=False)
@agent_option(required=False, help_text="The agent, when ID is not given.")
@json_option
def heartbeat(agent_id: str | None, agent: str | None, as_json: bool) -> None:
    """Extend agent ID's lease; report unread posts, pending wakes and refused ops; refresh its dirty set.

    The dirty set is computed from git (the agent's lane workspace against its lane head). An agent never
    registered is registered by its first heartbeat, which says so (`registered` in --json): a mistyped ID
    shows there rather than leaving the real agent's lease to lapse.

    \b
    Example:
      git lanes agent heartbeat coder-1 --json
    """
    def render(r: dict) -> str:
        # A first call registers the agent: said first, since a mistyped name makes a ghost agent.
        lines = [f"registered {r['agent']} (first call): no agent had that name"] if r.get("registered") else []
        lines += [f"{r['agent']}: lease until {ago(r['lease_until'])}, {r['unread']} unread posts, "
                 f"{len(r['wakes'])} pending wakes"]
        lines += [f"wake: {w['kind']} {w.get('task', '')[:8] if w.get('task') else ''}".rstrip() for w in r["wakes"]]
        lines += [f"refused: your {w['original']['type']} {w['original']['id'][:8]}: {w.get('message')}"
                  for w in r["refused"]]
        if r.get("dirty"):
            lines += render_overlaps(r["dirty"]["overlaps"])
        return "\n".join(lines)

    who = _which(agent_id, agent)
    run(lambda: open_api().agent_heartbeat(who), as_json, render)


@agent.command(name="list")
@json_option
def list_(as_json: bool) -> None:
    """List agents with their leases, lanes, tasks, claims and dirty-set sizes.

    \b
    Example:
      git lanes agent list
    """
    def render(rows: list[dict]) -> str:
        return table([[r["id"], r["kind"] or "-", "alive" if r["alive"] else "lapsed", r["lane"] or "-",
                       ",".join(t[:8] for t in r["tasks"]) or "-", f"{len(r['claims'])} claims",
                       f"{r['dirty']} dirty"] for r in rows]) or "no agents"

    run(lambda: open_api().agent_list(), as_json, render)
