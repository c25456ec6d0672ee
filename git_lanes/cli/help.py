"""`git lanes help [COMMAND…]`: a command's help, as `--help` prints it (git has `git help` too)."""

from __future__ import annotations

import json

import click

from git_lanes.cli import Command
from git_lanes.cli.output import json_option


@click.command("help", cls=Command)
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@json_option
@click.pass_context
def help_(ctx: click.Context, words: tuple[str, ...], as_json: bool) -> None:
    """Show the help of git lanes, or of a command: what `git lanes COMMAND --help` shows.

    \b
    Example:
      git lanes help
      git lanes help lane create
    """
    shown = ctx.find_root()
    for word in words:
        group = shown.command
        if not isinstance(group, click.Group):
            raise click.UsageError(f"{shown.command_path} has no subcommands; no {word!r} in it", ctx=ctx)
        # the group's own lookup: an unknown name fails as `git lanes NAME` does, with the nearest names
        _, command, _ = group.resolve_command(shown, [word])
        if command is None:
            raise click.UsageError(f"No such command {word!r}.", ctx=shown)
        shown = command.context_class(command, info_name=word, parent=shown)
    text = shown.get_help()
    if as_json:
        click.echo(json.dumps({"command": shown.command_path, "help": text + "\n"}, indent=2, sort_keys=True))
    else:
        click.echo(text, color=ctx.color)
