"""`domain/shell_lanes.VALUED` is kept by hand, since the hook path must not load click's command tree
(tests/test_startup_imports.py): this walks the real tree so it cannot drift from it again. A value-taking
option missing there makes its value an operand (`--agent-id`'s was taken for the lane `lane reset` rewrites);
a flag listed there swallows the operand after it."""

from __future__ import annotations

import click

from git_lanes.cli import cli
from git_lanes.domain.shell_lanes import VALUED

# The commands whose words shell_lanes reads (its docstring), and the groups on the way to them.
INSPECTED = [(), ("restore",), ("lane",), ("lane", "reset"), ("lane", "delete"), ("undo",), ("gc",), ("init",),
             ("doctor",), ("budget",), ("budget", "set"), ("budget", "clear"), ("budget", "show"), ("install",),
             ("uninstall",)]


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(click.Context(command), name)
        assert found is not None, path
        command = found
    return command


def _names(path: tuple[str, ...], valued: bool) -> set[str]:
    """Every name (hidden options and aliases included) of the command's options that take a value, or of
    those that do not."""
    command = _command(path)
    options = [p for p in command.get_params(click.Context(command)) if isinstance(p, click.Option)]
    return {name for option in options if (not option.is_flag and not option.count) == valued
            for name in (*option.opts, *option.secondary_opts)}


def test_every_value_taking_option_of_an_inspected_command_is_valued():
    missing = {path: sorted(_names(path, True) - VALUED) for path in INSPECTED}
    assert {path: names for path, names in missing.items() if names} == {}
    assert "--agent-id" in _names(("lane", "reset"), True)  # the walk sees hidden aliases


def test_no_flag_of_an_inspected_command_is_valued():
    taken = {path: sorted(_names(path, False) & VALUED) for path in INSPECTED}
    assert {path: names for path, names in taken.items() if names} == {}
