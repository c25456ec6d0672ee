"""`git lanes budget …`: dollar and token budgets per lane, task and ticket."""

from __future__ import annotations

from collections.abc import Callable

import click

from git_lanes.cli import SuggestingGroup
from git_lanes.cli.agent import agent_option
from git_lanes.cli.options import Finite
from git_lanes.cli.output import json_option, open_api, run, table


@click.group(cls=SuggestingGroup)
def budget() -> None:
    """Budgets per lane, task and ticket, in dollars and/or tokens.

    Costs roll up from runs (their transcripts' usage) and from transitions recorded outside runs. At 80% of
    a budget the agents working under it are warned through their hooks; at 100% their write and exec
    tools are blocked, their task is blocked with a board post, and a spawned agent is stopped.

    \b
    Example:
      git lanes budget set --task 3fa2 --usd 2.50
      git lanes budget show
    """


def subject_options(command: Callable) -> Callable:
    for option in reversed([click.option("--lane", metavar="LANE", help="A lane's budget."),
                            click.option("--task", metavar="TASK", help="A task's budget (a unique prefix will do)."),
                            click.option("--ticket", metavar="TICKET", help="A ticket's budget (its tasks together).")]):
        command = option(command)
    return command


def one_subject(lane: str | None, task: str | None, ticket: str | None) -> None:
    """A budget is of one lane, task or ticket: none or two of them is the command's shape, a usage error
    (exit 2), not a value the API should judge."""
    if sum(value is not None for value in (lane, task, ticket)) != 1:
        raise click.UsageError("name exactly one of --lane, --task and --ticket")


def render_budget(b: dict) -> str:
    key = b["key"] if b["scope"] == "lane" else b["key"][:8]
    return f"{b['scope']} {key}: {b['detail']} ({b['level']})"


@budget.command(name="set")
@subject_options
@click.option("--usd", type=Finite(min=0), metavar="X", help="The limit in dollars.")
@click.option("--tokens", type=click.IntRange(min=0), metavar="N", help="The limit in tokens (all kinds).")
@agent_option(required=False, help_text="Who sets it (default: your git user name).")
@json_option
def set_(lane: str | None, task: str | None, ticket: str | None, usd: float | None, tokens: int | None,
         agent: str | None, as_json: bool) -> None:
    """Set the budget of one lane, task or ticket (replacing the one it had).

    \b
    Example:
      git lanes budget set --lane feature/auth --usd 5 --tokens 2000000
    """
    one_subject(lane, task, ticket)
    if usd is None and tokens is None:
        raise click.UsageError("give --usd or --tokens (or both)")
    run(lambda: open_api().budget_set(lane=lane, task=task, ticket=ticket, usd=usd, tokens=tokens, actor=agent),
        as_json, lambda r: render_budget(r["budget"]))


@budget.command()
@subject_options
@agent_option(required=False, help_text="Who clears it.")
@json_option
def clear(lane: str | None, task: str | None, ticket: str | None, agent: str | None, as_json: bool) -> None:
    """Remove the budget of one lane, task or ticket.

    \b
    Example:
      git lanes budget clear --task 3fa2
    """
    one_subject(lane, task, ticket)
    run(lambda: open_api().budget_clear(lane=lane, task=task, ticket=ticket, actor=agent), as_json,
        lambda r: "budget cleared")


@budget.command()
@subject_options
@json_option
def show(lane: str | None, task: str | None, ticket: str | None, as_json: bool) -> None:
    """Show budgets with what was spent against each (runs and transitions) and their level: ok, warn (80%),
    exhausted.

    \b
    Example:
      git lanes budget show
      git lanes budget show --ticket 91c0 --json
    """
    def render(rows: list[dict]) -> str:
        if not rows:
            return "no budgets"
        return table([["SCOPE", "OF", "LIMIT", "SPENT", "USED", "LEVEL"]] + [
            [r["scope"], r["key"] if r["scope"] == "lane" else r["key"][:8],
             " ".join(filter(None, [f"${r['usd']:.2f}" if r["usd"] is not None else "",
                                    f"{r['tokens']} tokens" if r["tokens"] is not None else ""])),
             f"${r['spent']['usd']:.4f} {r['spent']['tokens']} tokens", f"{r['used'] * 100:.0f}%", r["level"]]
            for r in rows])

    if any(value is not None for value in (lane, task, ticket)):
        one_subject(lane, task, ticket)
    run(lambda: open_api().budget_show(lane=lane, task=task, ticket=ticket), as_json, render)
