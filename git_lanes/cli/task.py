"""`git lanes task …`: tasks with dependencies and compare-and-swap claims."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from git_lanes.cli import SuggestingGroup
from git_lanes.cli.options import agent_option, hidden_alias
from git_lanes.cli.output import json_option, left_pending_note, open_api, render_overlaps, run, short, table

STATUSES = ["open", "claimed", "blocked", "needs_review", "done"]


def render_task_row(rows: list[dict]) -> str:
    return table([[short(r["id"]), r["status"] + ("*" if r["ready"] and r["status"] != "done" else ""),
                   r["owner"] or "-", f"v{r['version']}", r["title"]] for r in rows]) or "no tasks"


@click.group(cls=SuggestingGroup)
def task() -> None:
    """Create, list, claim and finish tasks.

    Exactly one of several concurrent claimers of a task wins; the others get exit code 3 at once and can
    take another task. A `*` after a status means every dependency is done.

    \b
    Example:
      git lanes task create "Add login" --files 'src/auth/**'
      git lanes task list --ready
      git lanes task claim 3fa2 --agent coder-1
    """


@task.command()
@click.argument("title")
@click.option("--description", "-d", metavar="TEXT", help="What needs doing, in more words.")
@click.option("--depends", multiple=True, metavar="TASK", help="A task that must be done first (repeatable).")
@click.option("--ticket", metavar="TICKET", help="The ticket this task belongs to.")
@click.option("--files", multiple=True, metavar="GLOB", help="Files the task will touch (repeatable); claimed "
              "for whoever claims the task.")
@agent_option(required=False, help_text="Who creates it (default: your git user name).")
@json_option
def create(title: str, description: str | None, depends: tuple[str, ...], ticket: str | None,
           files: tuple[str, ...], agent: str | None, as_json: bool) -> None:
    """Create a task titled TITLE; print its id.

    \b
    Example:
      git lanes task create "Add login form" --depends 3fa2 --ticket 91c0 --files 'src/auth/**'
    """
    run(lambda: open_api().task_create(title, actor=agent, description=description, depends=depends,
                                       ticket=ticket, files=files), as_json, lambda r: r["task"])


@task.group()
def dep() -> None:
    """Edit task dependencies.

    \b
    Example:
      git lanes task dep add 7c1e 3fa2
    """


@dep.command(name="add")
@click.argument("task_id", metavar="TASK")
@click.argument("depends_on", metavar="DEPENDS_ON")
@agent_option(required=False, help_text="Who makes the change.")
@json_option
def dep_add(task_id: str, depends_on: str, agent: str | None, as_json: bool) -> None:
    """Make TASK wait for DEPENDS_ON. A dependency that would close a cycle is refused and named.

    \b
    Example:
      git lanes task dep add 7c1e 3fa2
    """
    def render(r: dict) -> str:
        verb = "now depends on" if r["added"] else "already depends on"
        return f"task {short(r['task'])} {verb} {short(r['depends_on'])}"

    run(lambda: open_api().task_dep_add(task_id, depends_on, agent), as_json, render)


@task.command(name="list")
@click.option("--ready", is_flag=True, help="Only open tasks whose dependencies are all done.")
@click.option("--status", type=click.Choice(STATUSES), help="Only tasks with this status.")
@click.option("--owner", metavar="AGENT", help="Only tasks this agent holds.")
@json_option
def list_(ready: bool, status: str | None, owner: str | None, as_json: bool) -> None:
    """List tasks, oldest first.

    \b
    Example:
      git lanes task list --ready
    """
    run(lambda: open_api().task_list(ready=ready, status=status, owner=owner), as_json, render_task_row)


@task.command()
@click.argument("task_id", metavar="TASK")
@json_option
def show(task_id: str, as_json: bool) -> None:
    """Show a task with its version, dependencies, owner and lane.

    \b
    Example:
      git lanes task show 3fa2 --json
    """
    def render(r: dict) -> str:
        lines = [f"task {r['id']}  v{r['version']}", f"title    {r['title']}",
                 f"status   {r['status']}{' (owner lease lapsed)' if r['lapsed'] else ''}"
                 f"{', ready' if r['ready'] else ''}",
                 f"owner    {r['owner'] or '-'}", f"lane     {r['lane'] or '-'}", f"ticket   {short(r['ticket'])}"]
        lines += [f"depends  {short(d)} ({s})" for d, s in r["depends_status"].items()]
        lines += [f"files    {f}" for f in r["files"]]
        if r["blocked_reason"]:
            lines.append(f"blocked  {r['blocked_reason']}")
        if r["description"]:
            lines += ["", r["description"]]
        return "\n".join(lines)

    run(lambda: open_api().task_show(task_id), as_json, render)


def _old_version_spelling(command: Callable[..., Any]) -> Callable[..., Any]:
    """`task claim --version V` was the first spelling; it read like the global `--version`."""
    return hidden_alias(command, alias="--version", name="version", canonical="--expect-version", type=int,
                        metavar="V")


@task.command()
@click.argument("task_id", metavar="TASK")
@agent_option()
@click.option("--expect-version", "version", type=int, metavar="V",
              help="Claim only if the task is still at this version.")
@click.option("--lane", metavar="LANE", help="The lane the work happens in (default: the agent's lane); the owner "
              "claiming its task again with another lane moves the task there.")
@click.option("--ahead/--ready-only", default=True,
              help="A task whose dependencies are not done is claimed ahead of them (the default), and `git "
                   "lanes wait` wakes you when they are; --ready-only refuses it instead (exit 1, naming them).")
@json_option
@_old_version_spelling
def claim(task_id: str, agent: str, version: int | None, lane: str | None, ahead: bool, as_json: bool) -> None:
    """Claim TASK for an agent. A loser of a race, or a stale --expect-version, exits 3 at once. A task
    whose dependencies are not done is claimed ahead of them, and says so; --ready-only refuses it instead.

    The task's --files become the agent's file claims; overlaps with other agents are warned about.

    \b
    Example:
      git lanes task claim 3fa2 --agent coder-1 --expect-version 1
    """
    def render(r: dict) -> str:
        text = f"{r['owner']} {'already holds' if r['already'] else 'claimed'} task {short(r['task'])} (v{r['version']})"
        if not r["ready"]:
            text += "\nnot ready yet, claimed ahead of its dependencies: `git lanes wait` returns when they are done"
        return "\n".join([text] + render_overlaps(r["overlaps"]))

    run(lambda: open_api().task_claim(task_id, agent, version, lane, ahead=ahead), as_json, render)


@task.command()
@click.argument("task_id", metavar="TASK")
@click.option("--no-integrate", is_flag=True, help="Only mark it done: do not promote its lane.")
@agent_option(required=False, help_text="Who finished it.")
@json_option
def done(task_id: str, no_integrate: bool, agent: str | None, as_json: bool) -> None:
    """Mark TASK done, integrating its lane first through the merge gate.

    A task with a lane is promoted (accepted head, gates run on the merged tree) into its ticket's
    integration lane tickets/<short-id>, made from the trunk when the ticket's first task lands, or into the
    trunk when it has no ticket. On a collision (exit 3) or a failing required gate (exit 4) nothing moves:
    the task goes back to its owner as needs_review, with a handoff post naming the paths and the ways on,
    and the owner's `wait` returns. Finishing the task wakes the owners of tasks it makes ready; the last
    task of a ticket posts ticket_ready. An agent cannot finish a task another live agent holds (exit 3); a
    person (not a registered agent) may close any task.

    \b
    Example:
      git lanes task done 3fa2 --agent coder-1
      git lanes task done 3fa2 --no-integrate
    """
    def render(r: dict) -> str:
        lines = []
        integrated = r.get("integrated")
        if integrated:
            how = {"up_to_date": "already held all of it"}.get(integrated["status"], integrated["status"])
            lines.append(f"integrated {integrated['lane']} into {integrated['into']} ({how})")
            note = left_pending_note(integrated["lane"], integrated.get("left_pending"))
            lines += [note] if note else []
        lines.append(f"task {short(r['task'])} done")
        lines += [f"now ready: {short(t)}" for t in r["now_ready"]]
        lines += [f"woke {w['agent']} for {short(w['task'])}" for w in r["woken"]]
        unpublishable = r.get("ticket_unpublishable")
        if r["ticket_ready"] and unpublishable:
            lines += [f"ticket {short(r['ticket_ready'])} is ready (every task done) but has nothing to publish: "
                      f"{unpublishable['message']}", f"hint: {unpublishable['hint']}"]
        elif r["ticket_ready"]:
            lines.append(f"ticket {short(r['ticket_ready'])} is ready: `git lanes publish {short(r['ticket_ready'])}`")
        return "\n".join(lines)

    run(lambda: open_api().task_done(task_id, agent, integrate=not no_integrate), as_json, render)


@task.command()
@click.argument("task_id", metavar="TASK")
@click.option("--reason", required=True, help="Why the work cannot go on.")
@agent_option(required=False, help_text="Who blocks it.")
@json_option
def block(task_id: str, reason: str, agent: str | None, as_json: bool) -> None:
    """Pause TASK; its owner keeps it (a blocked task does not lapse).

    Another agent cannot pause a task a live agent holds (exit 3); a person may.

    \b
    Example:
      git lanes task block 3fa2 --reason "waiting for the API schema"
    """
    run(lambda: open_api().task_block(task_id, reason, agent), as_json,
        lambda r: f"task {short(r['task'])} blocked (owner {r['owner'] or '-'})")


@task.command()
@click.argument("task_id", metavar="TASK")
@agent_option(required=False, help_text="Who resumes it.")
@json_option
def resume(task_id: str, agent: str | None, as_json: bool) -> None:
    """Resume a blocked TASK.

    \b
    Example:
      git lanes task resume 3fa2
    """
    run(lambda: open_api().task_resume(task_id, agent), as_json,
        lambda r: f"task {short(r['task'])} {r['status']}")


@task.command()
@click.argument("task_id", metavar="TASK")
@click.option("--to", "target", required=True, metavar="AGENT", help="The new owner.")
@click.option("--note", metavar="TEXT", help="A word for the new owner, added to the handoff post.")
@agent_option(required=False, help_text="Who hands it over.")
@json_option
def handoff(task_id: str, target: str, note: str | None, agent: str | None, as_json: bool) -> None:
    """Hand TASK to another agent: owner, lane, file claims and dirty set move together in one op.

    The new owner gets a handoff post, even if it has not started yet.

    \b
    Example:
      git lanes task handoff 3fa2 --to coder-2 --note "tests are green, docs left"
    """
    def render(r: dict) -> str:
        moved = r["moved"]
        return (f"task {short(r['task'])} handed from {r['from'] or '-'} to {r['to']} (lane {moved['lane'] or '-'}, "
                f"{len(moved['claims'])} claims, {len(moved['dirty'])} dirty files)")

    run(lambda: open_api().task_handoff(task_id, target, agent, note), as_json, render)
