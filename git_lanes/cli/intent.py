"""The intent and cost options shared by every command that records a transition."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from git_lanes.cli.options import Finite, agent_option


def intent_options(command: Callable | None = None, *, required: bool = True) -> Callable:
    """The options as a decorator; `required=False` (as `@intent_options(required=False)`) lets a command
    that can name its own intent, like `promote`, leave out -m and --agent."""
    if command is None:
        return lambda decorated: intent_options(decorated, required=required)
    options = [
        click.option("-m", "--message", "--prompt", "prompt", required=required, metavar="PROMPT",
                     help="The instruction that caused this change; its first line is the commit subject."),
        agent_option(required, "Who did the work.", name="agent_id"),
        click.option("--agent-type", metavar="TYPE", help="The agent's role, e.g. feature_dev."),
        click.option("--model", metavar="MODEL", help="The model behind the agent."),
        click.option("--tag", "tags", multiple=True, metavar="TAG", help="A semantic tag (repeatable)."),
        click.option("--tokens-in", type=click.IntRange(min=0), default=0, help="Input tokens spent."),
        click.option("--tokens-out", type=click.IntRange(min=0), default=0, help="Output tokens spent."),
        click.option("--api-calls", type=click.IntRange(min=0), default=0, help="Model API calls made."),
        click.option("--wall-time", type=Finite(min=0), default=0.0, metavar="SECONDS",
                     help="Wall-clock seconds spent."),
        click.option("--cost-usd", type=Finite(min=0), default=0.0, metavar="USD",
                     help="Money spent, in US dollars."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def intent_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """Pop the intent options from a command's parameters into the API's keyword arguments."""
    from git_lanes.model.records import Cost

    cost = Cost(tokens_in=params.pop("tokens_in"), tokens_out=params.pop("tokens_out"),
                api_calls=params.pop("api_calls"), wall_time=params.pop("wall_time"),
                cost_usd=params.pop("cost_usd"))
    return {"prompt": params.pop("prompt"), "agent_id": params.pop("agent_id"),
            "agent_type": params.pop("agent_type"), "model": params.pop("model"),
            "tags": tuple(params.pop("tags")), "cost": cost}
