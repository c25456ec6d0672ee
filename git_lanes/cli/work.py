"""`commit`, `propose`, `accept`, `reject`, `restore`: recording and deciding transitions."""

from __future__ import annotations

from typing import Any

import click

from git_lanes.cli import Command
from git_lanes.cli.intent import intent_kwargs, intent_options
from git_lanes.cli.options import ACTING, agent_option
from git_lanes.cli.output import held_line, json_option, nested_left, open_api, run, short

workspace_option = click.option("-w", "--workspace", "lane", metavar="LANE",
                                help="The lane whose workspace to use (default: the one holding the current "
                                     "directory).")


def render_transition(r: dict) -> str:
    if r.get("status") == "unchanged":
        return r["message"]
    summary = r["intent"]["prompt"].strip().splitlines()[0]
    text = f"{r['status']} {short(r['id'])} on {r['lane']}: {summary}"
    if r.get("reason"):
        text += f"\nreason: {r['reason']}"
    for evaluation in r.get("evaluations") or ():
        verdict = "passed" if evaluation["passed"] else "FAILED"
        text += f"\ngate {evaluation['gate']}: {verdict} ({evaluation['duration']:.2f}s)"
    return text + held_line(r)


def _record(auto_accept: bool, lane: str | None, params: dict[str, Any], as_json: bool) -> None:
    def action() -> dict:
        import os

        return open_api().commit(lane=lane, cwd=os.getcwd(), auto_accept=auto_accept, **intent_kwargs(params))

    run(action, as_json, render_transition)


@click.command(cls=Command)
@workspace_option
@intent_options
@click.option("--auto-accept", is_flag=True, help="Evaluate the gates and accept at once.")
@json_option
def commit(lane: str | None, auto_accept: bool, as_json: bool, **params: Any) -> None:
    """Snapshot a workspace as a new state of its lane, recording intent and cost.

    The state is proposed; with --auto-accept it is decided at once. A workspace that matches its lane
    head makes no new state and says so. Commits made in the workspace with plain `git commit` on top of
    the lane head become the new state's ancestry; a workspace whose HEAD left the lane head otherwise,
    with unresolved merge conflicts, or in the middle of a git merge or rebase, is refused.

    \b
    Example:
      git lanes commit -m "Add login form" --agent coder-1 --tokens-in 1200 \\
          --tokens-out 800 --cost-usd 0.02 --tag auth --auto-accept
    """
    _record(auto_accept, lane, params, as_json)


@click.command(cls=Command)
@workspace_option
@intent_options
@json_option
def propose(lane: str | None, as_json: bool, **params: Any) -> None:
    """Snapshot a workspace as a proposed state, to be accepted or rejected later.

    \b
    Example:
      git lanes propose -w feature/auth -m "Refactor session store" --agent coder-2
    """
    _record(False, lane, params, as_json)


@click.command(cls=Command)
@click.argument("transition_id", metavar="ID")
@agent_option(required=False, help_text=ACTING)
@json_option
def accept(transition_id: str, agent: str | None, as_json: bool) -> None:
    """Accept proposal ID: its lane moves to the proposed state (exit 3 if the lane moved meanwhile).

    The trunk's gates judge the proposed state first; a failing required gate rejects it (exit 4).

    \b
    Example:
      git lanes accept 3f9c2a1b
    """
    run(lambda: open_api().accept(transition_id, actor=agent), as_json, render_transition)


@click.command(cls=Command)
@click.argument("transition_id", metavar="ID")
@click.option("--reason", metavar="TEXT", help="Why it was rejected; kept with the attempt as signal.")
@agent_option(required=False, help_text=ACTING)
@json_option
def reject(transition_id: str, reason: str | None, agent: str | None, as_json: bool) -> None:
    """Reject proposal ID. The attempt is kept under refs/lanes/rejected/ as signal.

    \b
    Example:
      git lanes reject 3f9c2a1b --reason "breaks the session invariant"
    """
    run(lambda: open_api().reject(transition_id, reason, actor=agent), as_json, render_transition)


@click.command(cls=Command)
@click.argument("state", metavar="STATE")
@workspace_option
@click.option("--force", is_flag=True,
              help="Restore even over unsnapshotted edits or ignored files it overwrites (kept in a backup ref); "
                   "a nested git repository is left in place.")
@agent_option(required=False, help_text=ACTING)
@json_option
def restore(state: str, lane: str | None, force: bool, agent: str | None, as_json: bool) -> None:
    """Make a workspace's files equal STATE (a lane, transition id or git revision).

    The lane does not move: the next commit records the return to STATE as a new transition. Restoring a
    workspace to its own lane brings a stale workspace up to date.

    \b
    Example:
      git lanes restore 3f9c2a1b -w feature/auth
    """
    import os

    def render(r: dict) -> str:
        text = f"restored workspace of {r['lane']} to {short(r['state'])}"
        if r["changed_from_head"]:
            text += f" ({len(r['changed_from_head'])} paths differ from the lane head; commit to record it)"
        return text + (f"\nunsnapshotted edits kept at {r['backup']}" if r["backup"] else "") + nested_left(r)

    run(lambda: open_api().restore(state, lane=lane, cwd=os.getcwd(), force=force, actor=agent), as_json, render)
