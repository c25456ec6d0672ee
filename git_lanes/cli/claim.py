"""`git lanes claim …` and `git lanes dirty …`: where agents mean to work and what they actually changed.
Both warn about overlaps and never block."""

from __future__ import annotations

import click

from git_lanes.cli import SuggestingGroup
from git_lanes.cli.options import agent_option
from git_lanes.cli.output import json_option, open_api, render_overlaps, run, short, table


@click.group(cls=SuggestingGroup)
def claim() -> None:
    """Claim files you mean to change; overlaps with others are warned about, never blocked.

    \b
    Example:
      git lanes claim add 'src/auth/**' --agent coder-1
      git lanes claim list
    """


@claim.command()
@click.argument("globs", nargs=-1, required=True, metavar="GLOB...")
@agent_option()
@click.option("--task", metavar="TASK", help="The task these files are for.")
@json_option
def add(globs: tuple[str, ...], agent: str, task: str | None, as_json: bool) -> None:
    """Claim files matching GLOB (repository-relative; `**` spans directories; a plain path claims
    everything under it). Prints overlaps with other agents' claims and dirty files and wakes those agents.

    \b
    Example:
      git lanes claim add 'src/auth/**' docs/auth.md --agent coder-1
    """
    def render(r: dict) -> str:
        return "\n".join([f"{r['agent']} claims {', '.join(r['claims'])}"] + render_overlaps(r["overlaps"]))

    run(lambda: open_api().claim_add(globs, agent, task), as_json, render)


@claim.command(name="list")
@click.option("--agent", "agent", metavar="ID", help="Only this agent's claims.")
@json_option
def list_(agent: str | None, as_json: bool) -> None:
    """List file claims: the agents' own (a change by someone else is warned about) and the exclusive claims of
    `git lanes dispatch` plans (marked exclusive, with the one lane that may change those paths).

    \b
    Example:
      git lanes claim list --json
    """
    def render(rows: list[dict]) -> str:
        return table([[r["agent"] or "-", r["glob"], short(r.get("task")),
                       f"exclusive to lane {r['lane']}" if r["exclusive"] else ""] for r in rows]) or "no claims"

    run(lambda: open_api().claim_list(agent), as_json, render)


@claim.command()
@click.argument("globs", nargs=-1, metavar="[GLOB...]")
@agent_option()
@json_option
def release(globs: tuple[str, ...], agent: str, as_json: bool) -> None:
    """Release the agent's claims on GLOB… (all of them when none is given).

    \b
    Example:
      git lanes claim release 'src/auth/**' --agent coder-1
    """
    run(lambda: open_api().claim_release(agent, globs), as_json,
        lambda r: f"{r['agent']} released {', '.join(r['released']) or 'nothing'}")


@click.group(cls=SuggestingGroup)
def dirty() -> None:
    """Publish and list dirty sets: the files each agent actually changed, computed from git.

    \b
    Example:
      git lanes dirty publish --agent coder-1
      git lanes dirty list
    """


@dirty.command()
@agent_option()
@json_option
def publish(agent: str, as_json: bool) -> None:
    """Compute the agent's dirty set from its lane workspace (against the lane head) and publish it.

    Prints overlaps with other agents' claims and dirty files (waking them) and the files changed outside
    the agent's own claims.

    \b
    Example:
      git lanes dirty publish --agent coder-1
    """
    def render(r: dict) -> str:
        lines = [f"{r['agent']}: {len(r['files'])} changed files in lane {r['lane']}"]
        lines += render_overlaps(r["overlaps"])
        lines += [f"unclaimed: {path} (claim it with `git lanes claim add`)" for path in r["unclaimed"]]
        return "\n".join(lines)

    run(lambda: open_api().dirty_publish(agent), as_json, render)


@dirty.command(name="list")
@json_option
def list_dirty(as_json: bool) -> None:
    """List every agent's published dirty set.

    \b
    Example:
      git lanes dirty list
    """
    run(lambda: open_api().dirty_list(), as_json,
        lambda rows: table([[r["agent"], r.get("lane") or "-", path] for r in rows for path in r["files"]])
        or "no dirty files")
