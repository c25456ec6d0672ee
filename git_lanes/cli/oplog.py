"""`git lanes op …` and `git lanes undo`: the operation log, and taking an operation back."""

from __future__ import annotations

import time

import click

from git_lanes.cli import Command, SuggestingGroup
from git_lanes.cli.options import ACTING, agent_option, limit_option
from git_lanes.cli.output import json_option, open_api, run, short, table


@click.group(cls=SuggestingGroup)
def op() -> None:
    """The operation log: every lanes operation that moved refs, newest first.

    Recorded in refs/lanes/oplog (local to this repository, like jj's op log): commit, accept, reject,
    promote, lane create/delete/reset, restore, pull, sync, undo, each with the refs it moved old -> new,
    the transition records it changed and the ledger ops it appended. Ledger ops made on their own that an
    undo can reverse (claims, posts, tasks, tickets, budgets) are listed too, read from refs/lanes/ledger.

    \b
    Example:
      git lanes op log -n 10
      git lanes op show 3f9c2a1b
    """


@op.command(name="log")
@limit_option("How many operations to show.", type=click.IntRange(min=0), default=20, show_default=True)
@json_option
def log_(limit: int, as_json: bool) -> None:
    """List operations, newest first, with who did them and whether they were undone.

    \b
    Example:
      git lanes op log
      git lanes op log -n 50 --json
    """
    def render(rows: list[dict]) -> str:
        if not rows:
            return "no operations recorded yet" if limit else ""
        lines = []
        for r in rows:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["time"]))
            mark = f"  (undone by {short(r['undone_by'])})" if r["undone_by"] else ""
            lines.append([short(r["id"]), when, r["actor"], r["description"] + mark])
        return table(lines)

    run(lambda: open_api().op_log(limit), as_json, render)


@op.command(name="show")
@click.argument("operation", metavar="OP")
@json_option
def show(operation: str, as_json: bool) -> None:
    """Show operation OP (a unique id prefix): every ref it moved, the notes and ledger ops it wrote.

    \b
    Example:
      git lanes op show 3f9c
    """
    def render(r: dict) -> str:
        if r["kind"] == "ledger":
            return f"ledger op {r['id']} {r['type']} by {r['actor']}\nargs {r['args']}\nresult {r['result']}"
        lines = [f"operation {r['id']} by {r['actor']}: {r['description']}"]
        if r["undoes"]:
            lines.append(f"undoes {r['undoes']}")
        lines += [f"  {m['ref']}: {short(m['old'])} -> {short(m['new'])}" + ("  (files)" if m["files"] else "")
                  for m in r["moves"]]
        lines += [f"  note of {short(n['object'])}: {short(n['old'])} -> {short(n['new'])}" for n in r["notes"]]
        lines += [f"  ledger op {short(s['id'])} {s['type']}" for s in r["ledger"]]
        lines += [f"  workspace of {w['lane']}: {short(w['before'])} -> {short(w['after'])}" for w in r["workspaces"]]
        if r["backup"]:
            lines.append(f"what it replaced is kept at {r['backup']}")
        return "\n".join(lines)

    run(lambda: open_api().op_show(operation), as_json, render)


@click.command(cls=Command)
@click.argument("operation", metavar="[OP]", required=False)
@click.option("--dry-run", is_flag=True, help="Check that OP can be undone and say what would move; move nothing.")
@agent_option(required=False, help_text=ACTING)
@json_option
def undo(operation: str | None, dry_run: bool, agent: str | None, as_json: bool) -> None:
    """Undo operation OP (default: the newest in `git lanes op log`).

    Every ref OP moved goes back by compare-and-swap, its transition records get their old text back and
    its ledger ops are reversed by inverse ops (a claim by a release, a post by a retraction), after
    checking that nothing depends on them since: a ref that moved again, a record changed again, a lane or
    proposal built on a state OP made. If anything does, nothing moves and the exit code is 3, naming it.
    An operation that appended an op undo cannot reverse (a handoff, a task sent back for review, a
    publication) is refused, exit 1, naming that op.
    Workspaces follow their lanes file by file; a file with unsaved edits is left as typed and reported.
    What the undo replaces is kept under refs/lanes/backups/-undo/, and the undo is itself an operation:
    undoing it redoes OP. An undo cut short after its refs moved (killed, say) is finished by the next
    `git lanes undo`, which brings the workspaces along and, given no OP, does nothing else; one cut short
    before anything moved is finished by the next `git lanes undo` given no OP, which undoes the OP it
    was given rather than the newest operation.

    \b
    Example:
      git lanes undo
      git lanes undo 3f9c2a1b --dry-run
    """
    def render(r: dict) -> str:
        lines = []
        for f in r.get("finished", []):
            if r.get("dry_run"):  # what finishing would bring along is known only once it is done
                lines.append(f"would finish the interrupted undo of {short(f['undone'])}: {f['description']}")
                continue
            lines.append(f"finished the interrupted undo of {short(f['undone'])}: {f['description']}")
            lines += workspace_lines(f["workspaces"])
        if r["undone"] is None:
            return "\n".join(lines)
        if r.get("interrupted"):
            doing = "would finish" if r.get("dry_run") else "finishing"
            lines.append(f"the interrupted undo of {short(r['undone'])} had moved nothing yet: {doing} it")
        verb = "would undo" if r.get("dry_run") else "undid"
        lines.append(f"{verb} {short(r['undone'])}: {r['description']}")
        lines += [f"  {m['ref']}: {short(m['from'])} -> {short(m['to'])}" for m in r.get("moves", [])]
        if r.get("ledger"):
            lines.append(f"  ledger: inverse op {', '.join(short(i) for i in r['ledger'])}")
        lines += workspace_lines(r.get("workspaces", []))
        if r.get("backup"):
            lines.append(f"what it replaced is kept at {r['backup']}")
        if r.get("op"):
            lines.append(f"redo with `git lanes undo {short(r['op'])}`")
        return "\n".join(lines)

    run(lambda: open_api().undo(operation, actor=agent, dry_run=dry_run), as_json, render)


def workspace_lines(workspaces: list[dict]) -> list[str]:
    """What an undo did (or left) in each workspace, a line each."""
    lines = []
    for w in workspaces:
        if w.get("attention"):
            lines.append(f"  {w['lane']}: left as typed (unsaved edits), needing attention: "
                         f"{', '.join(w['attention'])}")
        if w.get("restored_edits"):
            lines.append(f"  {w['lane']}: unsaved edits put back from {w['restored_edits']}")
        if w.get("edits_removed"):
            lines.append(f"  {w['lane']}: the unsaved edits kept at {w['edits_removed']} were removed by gc "
                         "since; they cannot come back")
        if w.get("recreated"):
            lines.append(f"  {w['lane']}: workspace made again at {w['path']}")
    return lines
