"""`push`, `pull` and `sync`: all lane state through an ordinary git remote."""

from __future__ import annotations

import click

from git_lanes.cli import Command
from git_lanes.cli.options import ACTING, agent_option
from git_lanes.cli.output import json_option, run
from git_lanes.lite.sync import render


def _command(mode: str, remote: str | None, trunk: str | None, agent: str | None, as_json: bool) -> None:
    def action() -> dict:
        from git_lanes.api import Lanes
        from git_lanes.model.ids import AgentId

        acting = {"actor": AgentId(agent)} if agent is not None else {}  # refused before a clone is set up
        api, initialized = Lanes.open_for_sync(None, trunk, remote)
        report = getattr(api, mode)(remote, **acting).to_dict()
        report["initialized"] = initialized is not None
        report["trunk"] = api.trunk
        return report

    run(action, as_json, render)


_remote_argument = click.argument("remote", required=False)
_TRUNK_HELP = "In a clone not yet set up for lanes: the trunk (default: the checked-out branch)."
_trunk_option = click.option("--trunk", metavar="NAME", help=_TRUNK_HELP)


@click.command(cls=Command)
@_remote_argument
@_trunk_option
@agent_option(required=False, help_text=ACTING)
@json_option
def sync(remote: str | None, trunk: str | None, agent: str | None, as_json: bool) -> None:
    """Pull, merge and push all lane state with REMOTE (default: lanes.remote, else origin).

    Lane heads only fast-forward (a diverged lane is reported, nothing is overwritten); transition notes
    merge per record; the ledger's local-only ops are replayed on the remote's head, and an op that no
    longer holds is recorded as refused for its agent. Pushes carry a lease and are retried after a fresh
    merge when another machine pushed first. Exits 3 when a lane diverged or a ref git-lanes would never
    write (a lane named like the trunk, a non-commit head) was refused.

    \b
    Example:
      git lanes sync origin
      git lanes sync --json
    """
    _command("sync", remote, trunk, agent, as_json)


@click.command(cls=Command)
@_remote_argument
@_trunk_option
@agent_option(required=False, help_text=ACTING)
@json_option
def pull(remote: str | None, trunk: str | None, agent: str | None, as_json: bool) -> None:
    """Fetch REMOTE's lane state and merge it here, pushing nothing.

    Works in a plain `git clone` not yet set up for lanes: it is set up first. Exits 3 when a lane diverged
    or a ref was refused.

    \b
    Example:
      git clone https://example.com/project.git && cd project
      git lanes pull
    """
    _command("pull", remote, trunk, agent, as_json)


@click.command(cls=Command)
@_remote_argument
@_trunk_option
@json_option
def push(remote: str | None, trunk: str | None, as_json: bool) -> None:
    """Push the lane state that is strictly ahead of REMOTE, under a lease on each ref.

    Nothing here changes; what would need a merge first (the remote moved too) is held back and listed:
    run `git lanes sync` for it. Exits 3 when a lane diverged or a ref was refused.

    \b
    Example:
      git lanes push origin
    """
    _command("push", remote, trunk, None, as_json)
