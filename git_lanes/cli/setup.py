"""`init` and `demo`."""

from __future__ import annotations

import click

from git_lanes.cli import Command
from git_lanes.cli.output import echo_as_it_goes, json_option, run, short


@click.command(cls=Command)
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--trunk", metavar="NAME", help="The trunk lane's branch, one that exists (default: the current branch, or main).")
@json_option
def init(directory: str | None, trunk: str | None, as_json: bool) -> None:
    """Set up a repository for lanes (running `git init` first in a plain directory). Idempotent.

    Sets lanes.trunk, core.logAllRefUpdates=always and notes.displayRef, excludes .lanes/, and gives an
    empty repository an initial state from its working tree.

    The trunk must be a branch that exists, as for `git switch`: a mistyped --trunk is refused with the
    branches there are. Before the first commit the trunk named is what HEAD becomes (as `git init -b`); a
    branch only a remote has is made local from it (`git switch` does the same).

    \b
    Example:
      git lanes init --trunk main
      git branch release && git lanes init --trunk release   # a new trunk branch
    """
    def action() -> dict:
        from git_lanes.api import Lanes

        return Lanes.init(directory, trunk)[1]

    def render(r: dict) -> str:
        if r["already_initialized"]:
            text = f"{r['root']} is already set up for lanes (trunk {r['trunk']})"
        else:
            text = f"set up {r['root']} for lanes (trunk {r['trunk']})"
            text += f"\ninitial state {short(r['initial_state'])}" if r["initial_state"] else ""
        if r["checked_out"] != r["trunk"]:
            where = f"branch {r['checked_out']}" if r["checked_out"] else "a detached HEAD"
            text += (f"\nnote: {r['root']} is on {where}, not the trunk, so promotions into {r['trunk']} do not "
                     f"update its files; `git switch {r['trunk']}` makes it the trunk's worktree")
        return text

    run(action, as_json, render)


@click.command(cls=Command)
@click.option("--keep", is_flag=True, help="Keep the demo repository instead of deleting it.")
@click.option("--directory", type=click.Path(file_okay=False), help="Play the demo in this new directory.")
@json_option
def demo(keep: bool, directory: str | None, as_json: bool) -> None:
    """Play a short scenario of agents working in parallel lanes in a temporary repository.

    \b
    Example:
      git lanes demo --keep
    """
    def action() -> dict:
        from git_lanes.demo import play

        return play(directory=directory, keep=keep, narrate=None if as_json else echo_as_it_goes)

    run(action, as_json, lambda r: f"\ndemo repository: {r['repository']}" if r.get("kept") else None)
