"""`git lanes`: the command-line face. Command modules load only when their command runs, so `--help`,
`--version` and commands that need no repository pay for neither pygit2 nor the whole command tree."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from git_lanes import __version__

# name -> "module:attribute"; one module per command group.
COMMANDS: dict[str, str] = {
    "init": "git_lanes.cli.setup:init",
    "demo": "git_lanes.cli.setup:demo",
    "lane": "git_lanes.cli.lane:lane",
    "commit": "git_lanes.cli.work:commit",
    "propose": "git_lanes.cli.work:propose",
    "accept": "git_lanes.cli.work:accept",
    "reject": "git_lanes.cli.work:reject",
    "restore": "git_lanes.cli.work:restore",
    "status": "git_lanes.cli.inspect:status",
    "history": "git_lanes.cli.inspect:history",
    "trace": "git_lanes.cli.inspect:trace",
    "show": "git_lanes.cli.inspect:show",
    "diff": "git_lanes.cli.inspect:diff",
    "promote": "git_lanes.cli.promote:promote",
    "evaluate": "git_lanes.cli.promote:evaluate",
    "gates": "git_lanes.cli.promote:gates_",
    "op": "git_lanes.cli.oplog:op",
    "undo": "git_lanes.cli.oplog:undo",
    "dispatch": "git_lanes.cli.dispatch:dispatch",
    "push": "git_lanes.cli.sync:push",
    "pull": "git_lanes.cli.sync:pull",
    "sync": "git_lanes.cli.sync:sync",
    "agent": "git_lanes.cli.agent:agent",
    "task": "git_lanes.cli.task:task",
    "ticket": "git_lanes.cli.ticket:ticket",
    "claim": "git_lanes.cli.claim:claim",
    "dirty": "git_lanes.cli.claim:dirty",
    "board": "git_lanes.cli.board:board",
    "wait": "git_lanes.cli.board:wait",
    "mcp": "git_lanes.cli.mcp:mcp",
    "serve": "git_lanes.cli.serve:serve",
    "run": "git_lanes.cli.run:run_group",
    "hook": "git_lanes.cli.hook:hook",
    "install": "git_lanes.cli.hook:install",
    "uninstall": "git_lanes.cli.hook:uninstall",
    "doctor": "git_lanes.cli.hook:doctor",
    "spawn": "git_lanes.cli.spawn:spawn",
    "ps": "git_lanes.cli.spawn:ps",
    "stop": "git_lanes.cli.spawn:stop",
    "tell": "git_lanes.cli.spawn:tell",
    "logs": "git_lanes.cli.spawn:logs",
    "budget": "git_lanes.cli.budget:budget",
    "publish": "git_lanes.cli.publish:publish",
    "gc": "git_lanes.cli.upkeep:gc",
    "help": "git_lanes.cli.help:help_",
}


class Context(click.Context):
    """click's context, whose help formatter measures the terminal without importing shutil (which loads the
    compression modules with it, ~1 ms) for `shutil.get_terminal_size`: the same answer, read the same way."""

    def make_formatter(self) -> click.HelpFormatter:
        from click import formatting

        if self.terminal_width is not None or formatting.FORCED_WIDTH is not None:
            return super().make_formatter()
        max_width = self.max_content_width or 80
        width = max(min(_terminal_columns(), max_width) - 2, 50)
        return self.formatter_class(width=width, max_width=max_width)


def _terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`: $COLUMNS, else standard output's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns or 80


class _Lean:
    """What every git-lanes command does differently from click's, to start faster (issue 15):

    - its context measures the terminal for `--help` without shutil (`Context`);
    - its `--help` option carries its help text already: click's asks gettext for it, whose first call
      imports `locale` (~1.5 ms a process);
    - its short options are known to the parser under their own name too: click tries every `-x` as a long
      option first, and the miss builds a NoSuchOption that imports difflib (~1.5 ms) to suggest names
      nobody sees, before parsing it as the short option it is. (A parser of another click version, without
      the tables this reads, is left as it is.)"""

    context_class = Context
    params: list[click.Parameter]
    add_help_option: bool
    get_help_option_names: Callable[[click.Context], list[str]]

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        names = self.get_help_option_names(ctx)
        if not names or not self.add_help_option:
            return None
        made: click.Option | None = self.__dict__.get("_lean_help")
        if made is None or made.opts != names:  # one object per command: click orders parameters by identity
            made = self.__dict__["_lean_help"] = click.Option(
                [*names, "_lanes_help"], is_flag=True, expose_value=False, is_eager=True, help="Show this message and exit.",
                callback=_show_help)
        return made

    def make_parser(self, ctx: click.Context) -> Any:
        parser = super().make_parser(ctx)  # type: ignore[misc]
        short, long = getattr(parser, "_short_opt", None), getattr(parser, "_long_opt", None)
        if isinstance(short, dict) and isinstance(long, dict):
            for name, option in short.items():
                long.setdefault(name, option)
        return parser


def _show_help(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(ctx.get_help(), color=ctx.color)
        ctx.exit()


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"git-lanes, version {__version__}", color=ctx.color)
        ctx.exit()


class Command(_Lean, click.Command):
    """A git-lanes command: `@click.command(cls=Command)` (a group's `.command()` makes one by itself)."""


class SuggestingGroup(_Lean, click.Group):
    """A group that answers a mistyped command with the nearest ones, as git does ("statu" -> status) and as
    click already does for mistyped options."""

    command_class = Command
    group_class = type  # a group's `.group()` makes one of its own class

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                              list[str]]:
        name = click.utils.make_str(args[0]) if args else ""
        if args and self.get_command(ctx, name) is None and not name.startswith("-"):
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.6)
            if close:
                choices = " or ".join(repr(c) for c in close)
                ctx.fail(f"No such command {name!r}. Did you mean {choices}?")
        return super().resolve_command(ctx, args)


class OperandGroup(SuggestingGroup):
    """A group that takes one operand of its own besides its subcommands (`dispatch PLAN.toml`, `publish
    TICKET`): the first word that is neither an option of the group (nor an option's value) nor a subcommand
    (`is_operand`) is the operand, kept in `ctx.meta[operand_key]`, so options may come before or after it;
    after `--` the next word is the operand, whatever it is."""

    operand_key = "lanes_operand"

    def is_operand(self, ctx: click.Context, word: str) -> bool:
        return word not in self.commands

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        valued = {name for param in self.params if isinstance(param, click.Option) and not param.is_flag
                  for name in param.opts}
        index = 0
        while index < len(args):
            arg = args[index]
            if arg == "--":
                if index + 1 < len(args):
                    ctx.meta[self.operand_key] = args[index + 1]
                    args = args[:index] + args[index + 2:]
                break
            if arg.startswith("-"):
                index += 2 if arg in valued else 1
                continue
            if self.is_operand(ctx, arg):
                ctx.meta[self.operand_key] = arg
                args = args[:index] + args[index + 1:]
            break
        return super().parse_args(ctx, self.operand_taken(ctx, args))

    def operand_taken(self, ctx: click.Context, args: list[str]) -> list[str]:
        """The arguments left once the operand is taken, as click is to parse them."""
        return args


class LazyGroup(SuggestingGroup):
    def __init__(self, *args, lazy: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module_name, attribute = self.lazy[name].split(":")
            return getattr(importlib.import_module(module_name), attribute)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, with each command not yet loaded standing in from `summaries.SUMMARIES` (its own
        help, generated): `--help` then loads none of the command modules (~90 ms)."""
        from git_lanes.cli.summaries import SUMMARIES

        listed: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            known = SUMMARIES.get(name)
            module_name = self.lazy.get(name, "").split(":")[0]
            if known is not None and module_name not in sys.modules:
                short_help, help_text, hidden, deprecated = known
                command: click.Command | None = click.Command(name, help=help_text, short_help=short_help,
                                                              hidden=hidden, deprecated=deprecated)
            else:
                command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                listed.append((name, command))
        if listed:
            limit = formatter.width - 6 - max(len(name) for name, _ in listed)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in listed])


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
              help="Show the version and exit.")  # click.version_option's, less its gettext call
def cli() -> None:
    """Coordinate many AI coding agents working in one git repository.

    Each agent works in its own lane (a real git worktree); its work is snapshotted as git states with the
    intent and cost behind each change; promotion between lanes refuses to guess. All state lives in git.

    \b
    Example:
      git lanes init
      git lanes lane create feature/auth
      cd "$(git lanes lane path feature/auth)" && $EDITOR auth.py
      git lanes commit -m "Add login" --agent coder-1 --auto-accept

    Exit codes: 0 ok, 1 user error, 2 usage, 3 conflict or stale (also a sync that left a lane diverged,
    and a dry run that found what the real run would stop on), 4 gate failed, 5 remote unreachable or
    refused, 6 internal error.
    """


def main() -> None:
    args = sys.argv[1:]
    try:
        # Shell completion (contrib/completion/) talks to the `git-lanes` program through this variable;
        # click would derive it from the prog name, which has a space in it.
        code = cli.main(args=args, prog_name="git lanes", complete_var="_GIT_LANES_COMPLETE",
                        standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            sys.exit(130)  # Ctrl-C while click loaded the command: as cli/output.run exits once it runs
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        # A usage error still answers a `--json` caller in JSON, as every other error does.
        if "--json" in args:
            import json

            click.echo(json.dumps({"error": "usage", "message": exc.format_message()}, indent=2, sort_keys=True))
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
