"""Options several commands share, spelled one way everywhere (issue 8): `--agent ID` (or
`GIT_LANES_AGENT`) on every command that acts as an agent, `-n/--limit N` on every list that is cut short.
Old spellings stay as hidden aliases, so scripts written for them keep working."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

AGENT_ENV = "GIT_LANES_AGENT"
# --agent on a command a person or an agent runs, which records who did it in the operation log
ACTING = "The agent acting, recorded in the operation log (default: your git user name)."


def hidden_alias(command: Callable[..., Any], *, alias: str, name: str, canonical: str,
                 required: bool = False, **option: Any) -> Callable[..., Any]:
    """Add the hidden option `alias` for parameter `name` (spelled `canonical` in help). A value given on the
    command line under the alias wins over one the canonical option took from the environment."""
    slot = f"{name}__alias"

    @functools.wraps(command)
    def merged(*args: Any, **kwargs: Any) -> Any:
        value = kwargs.pop(slot)
        if value is not None and (kwargs.get(name) is None or _from_environment(name)):
            kwargs[name] = value
        if required and kwargs.get(name) is None:
            raise click.MissingParameter(param_hint=f"'{canonical}'", param_type="option")
        return command(*args, **kwargs)

    return click.option(alias, slot, hidden=True, **option)(merged)


def _from_environment(name: str) -> bool:
    context = click.get_current_context(silent=True)
    return context is not None and context.get_parameter_source(name) is ParameterSource.ENVIRONMENT


def agent_option(required: bool = True, help_text: str = "The agent acting.", *,
                 name: str = "agent") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--agent ID` (default: $GIT_LANES_AGENT); `--agent-id` is its hidden alias."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command = hidden_alias(command, alias="--agent-id", name=name, canonical="--agent", required=required,
                               metavar="ID")
        return click.option("--agent", name, envvar=AGENT_ENV, show_envvar=True, metavar="ID",
                            help=help_text + (" [required]" if required else ""))(command)
    return decorate


def limit_option(help_text: str, **option: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("-n", "--limit", "limit", metavar="N", help=help_text, **option)


class Finite(click.FloatRange):
    """A number option's type: click's FloatRange, where NaN and the infinities are out of every range. click
    lets `nan` through any bound (no comparison with it is true) and `inf` through a lower one, and the model
    then refused them with exit 1 where -1 on the same option is a usage error (exit 2)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{number} is not a finite number in the range {self._describe_range()}.", param, ctx)
        return number
