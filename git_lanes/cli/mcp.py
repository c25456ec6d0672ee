"""`git lanes mcp`: the MCP server an agent CLI starts (the server itself is in git_lanes/mcp/)."""

from __future__ import annotations

import os

import click

from git_lanes.cli import Command
from git_lanes.cli.agent import agent_option
from git_lanes.cli.output import fail, json_option, run, table
from git_lanes.mcp import DEFAULT_TOOLSETS, TOOLSETS


def parse_toolsets(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in (value or ",".join(DEFAULT_TOOLSETS)).split(",") if n.strip()))
    unknown = [n for n in names if n not in TOOLSETS]
    if unknown:
        raise click.BadParameter(f"unknown tool set {', '.join(unknown)} (choose from {', '.join(TOOLSETS)})")
    return names


@click.command(cls=Command)
@agent_option(required=False, help_text="The agent this server acts for; tools then need no agent_id.")
@click.option("--toolsets", envvar="GIT_LANES_TOOLSETS", show_envvar=True, callback=parse_toolsets,
              metavar="SET[,SET...]", help="Tool sets to offer besides core: publisher, maintenance "
              "(default: core).")
@click.option("--http", "http_port", type=click.IntRange(min=0, max=65535), metavar="PORT",
              help="Serve streamable HTTP on 127.0.0.1:PORT (0: any free port, printed) instead of stdio.")
@click.option("--list-tools", is_flag=True, help="Print the tools these options offer, and exit.")
@json_option
def mcp(agent: str | None, toolsets: tuple[str, ...], http_port: int | None, list_tools: bool,
        as_json: bool) -> None:
    """Serve this repository's lanes as MCP tools (Model Context Protocol), over stdio for the agent CLI that
    starts it.

    Each tool is one call of the same API the CLI uses, and returns what the CLI's --json prints; a failure
    is a tool error carrying {"error": {"code", "reason", "message", "hint"}}. With --agent (or
    GIT_LANES_AGENT) tools need no agent_id, and lanes default to the agent's assigned lane. Any number of
    servers, one per agent CLI, share the repository with each other and with the CLI. Tool sets: core
    (always on: agents, tasks, tickets, worktrees, file claims, dirty sets, board, waiting, commit, promote and
    the rest), maintenance (reclaim_orphan_worktrees, process_merge_queue, gc), publisher (publisher_status,
    publish_ticket, acquire_publish_lock, release_publish_lock, close_ticket_on_merge, clear_integration_branch,
    release_ticket_claims).

    \b
    Example:
      git lanes mcp --agent coder-1
      git lanes mcp --toolsets core,maintenance --list-tools
      claude mcp add lanes -- git lanes mcp --agent coder-1
    """
    root = os.getcwd()
    if list_tools:
        run(lambda: _tools(root, agent, toolsets), as_json,
            lambda rows: table([[r["name"], r["toolset"], r["summary"]] for r in rows]))
        return
    from git_lanes.errors import LanesError
    from git_lanes.mcp.launch import serve

    try:
        serve(root, agent, toolsets, http_port)
    except LanesError as exc:
        fail(exc, False)  # stdout is the protocol's: the error goes to standard error only
    except KeyboardInterrupt:
        raise SystemExit(130) from None


def _tools(root: str, agent: str | None, toolsets: tuple[str, ...]) -> list[dict]:
    import anyio

    from git_lanes.mcp.binding import Binding
    from git_lanes.mcp.server import build, catalog

    face = Binding(root, agent)
    sets = {spec.fn.__name__: spec.toolset for spec in catalog(face)}
    listed = anyio.run(build(face, toolsets).list_tools)
    return [{"name": t.name, "toolset": sets[t.name], "summary": (t.description or "").split(". ")[0].split("\n\n")[0].replace("\n", " "),
             "description": t.description, "input_schema": t.input_schema, "output_schema": t.output_schema}
            for t in listed]
