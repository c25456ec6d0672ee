"""`git lanes ticket …`: group tasks; a ticket whose tasks are all done is announced on the board."""

from __future__ import annotations

import click

from git_lanes.cli import SuggestingGroup
from git_lanes.cli.options import agent_option
from git_lanes.cli.output import json_option, open_api, run, short, table
from git_lanes.cli.task import render_task_row


@click.group(cls=SuggestingGroup)
def ticket() -> None:
    """Open tickets and link tasks to them.

    When every task of a ticket is done, a ticket_ready post appears on the board.

    \b
    Example:
      git lanes ticket open "Login flow"
      git lanes ticket link 91c0 3fa2
    """


@ticket.command(name="open")
@click.argument("title")
@agent_option(required=False, help_text="Who opens it (default: your git user name).")
@json_option
def open_(title: str, agent: str | None, as_json: bool) -> None:
    """Open a ticket titled TITLE; print its id.

    \b
    Example:
      git lanes ticket open "Login flow"
    """
    run(lambda: open_api().ticket_open(title, agent), as_json, lambda r: r["ticket"])


@ticket.command()
@click.argument("ticket_id", metavar="TICKET")
@click.argument("task_id", metavar="TASK")
@agent_option(required=False, help_text="Who links them.")
@json_option
def link(ticket_id: str, task_id: str, agent: str | None, as_json: bool) -> None:
    """Make TASK part of TICKET (leaving any ticket it was in), and say which ticket that made ready or
    opened again (a task not done joining a ready or published ticket: publish it again once it is done).

    \b
    Example:
      git lanes ticket link 91c0 3fa2
    """
    def render(r: dict) -> str:
        lines = [f"task {short(r['task'])} is in ticket {short(r['ticket'])}"]
        lines += [f"ticket {short(t)} is ready: all its tasks are done" for t in r.get("ready", ())]
        lines += [f"ticket {short(t)} is open again: " + (f"task {short(r['task'])} is not done" if t == r["ticket"]
                                                          else "it has no task left") for t in r.get("reopened", ())]
        return "\n".join(lines)

    run(lambda: open_api().ticket_link(ticket_id, task_id, agent), as_json, render)


@ticket.command(name="list")
@json_option
def list_(as_json: bool) -> None:
    """List tickets with how many of their tasks are done.

    \b
    Example:
      git lanes ticket list
    """
    run(lambda: open_api().ticket_list(), as_json,
        lambda rows: table([[short(r["id"]), r["status"], f"{r['done']}/{r['total']}", r["title"]]
                            for r in rows]) or "no tickets")


@ticket.command()
@click.argument("ticket_id", metavar="TICKET")
@json_option
def show(ticket_id: str, as_json: bool) -> None:
    """Show a ticket and its tasks.

    \b
    Example:
      git lanes ticket show 91c0
    """
    def render(r: dict) -> str:
        head = f"ticket {r['id']}  {r['status']}  {r['done']}/{r['total']} done\ntitle  {r['title']}"
        return head + ("\n" + render_task_row(r["task_records"]) if r["task_records"] else "")

    run(lambda: open_api().ticket_show(ticket_id), as_json, render)
