"""Tickets group tasks. When every task of a ticket is done, a `ticket_ready` post appears on the board (a
record for whoever publishes the work: never counted unread, never a wake)."""

from __future__ import annotations

from git_lanes.domain import stored
from git_lanes.domain.agents import SYSTEM, Reader
from git_lanes.domain.board import add_post
from git_lanes.domain.task_records import (get_task, get_ticket, readable, resolve_ticket, save_task, task_path,
                                           ticket_ids, ticket_path, validate_title)
from git_lanes.errors import StaleState, command
from git_lanes.ledger import Op, Tx

__all__ = ["attach", "get_ticket", "link", "list_tickets", "open_ticket", "recheck", "resolve_ticket",
           "ticket_ids", "ticket_path", "view"]


def open_ticket(tx: Tx, op: Op) -> dict:
    title = validate_title(op.args.get("title"))
    tx.put(ticket_path(op.id), {"id": op.id, "title": title, "tasks": [], "status": "open",
                                "created": op.time, "created_by": op.actor, "ready_at": None})
    return {"ticket": op.id}


def attach(tx: Tx, op: Op, ticket_id: str, task: dict) -> None:
    """Make `task` (a record already in `tx`) part of ticket `ticket_id`, leaving any ticket it was in."""
    previous = task.get("ticket")
    ticket = get_ticket(tx, ticket_id)
    if previous == ticket_id:
        return
    if ticket["status"] == "closed":
        # Its pull request was merged and its integration lane deleted: a task let in would integrate into a
        # lane nobody publishes, and the next `publish sync` would delete that lane again.
        raise StaleState(f"ticket {ticket_id[:8]} is closed: its pull request was merged", code="ticket_closed",
                         hint=f"put the task in a new ticket ({command('ticket open')})")
    if previous:
        old = get_ticket(tx, previous)
        old["tasks"] = [t for t in old["tasks"] if t != task["id"]]
        tx.put(ticket_path(previous), old)
        recheck(tx, op, previous)
    ticket["tasks"] = ticket["tasks"] + [task["id"]]
    tx.put(ticket_path(ticket_id), ticket)
    tx.put(task_path(task["id"]), {**task, "ticket": ticket_id})
    recheck(tx, op, ticket_id)


def recheck(tx: Tx, op: Op, ticket_id: str) -> str | None:
    """Mark the ticket ready (and post `ticket_ready`) when all its tasks are done; reopen it when a task that
    is not done joins it. Returns the ticket id when it just became ready."""
    ticket = get_ticket(tx, ticket_id)
    members = readable(tx, ticket["tasks"], get_task)  # one that cannot be read cannot be shown done
    all_done = bool(ticket["tasks"]) and len(members) == len(ticket["tasks"]) and \
        all(t["status"] == "done" for t in members)
    if all_done and ticket["status"] == "open":
        ticket.update(status="ready", ready_at=op.time)
        tx.put(ticket_path(ticket_id), ticket)
        add_post(tx, op, SYSTEM, "ticket_ready", f"ticket {ticket_id[:8]} \"{ticket['title']}\": all "
                 f"{len(ticket['tasks'])} tasks are done", None)
        return ticket_id
    if not all_done and ticket["status"] in ("ready", "published"):
        # a task joined a ready or published ticket: it waits for that task, and a re-publish updates the PR
        ticket.update(status="open", ready_at=None)
        tx.put(ticket_path(ticket_id), ticket)
    return None


def link(tx: Tx, op: Op) -> dict:
    ticket = get_ticket(tx, op.args.get("ticket"))
    task = get_task(tx, op.args.get("task"))
    previous = task.get("ticket")
    involved = [ticket["id"]] + ([previous] if previous and previous != ticket["id"] else [])
    before = {ticket_id: get_ticket(tx, ticket_id)["status"] for ticket_id in involved}
    attach(tx, op, ticket["id"], task)
    if previous != ticket["id"]:
        save_task(tx, op, get_task(tx, task["id"]))
    after = {ticket_id: get_ticket(tx, ticket_id)["status"] for ticket_id in involved}
    # What the move did to either ticket, as the board's ticket_ready post says it: the person linking sees it.
    return {"ticket": ticket["id"], "task": task["id"], "previous": previous, "linked": previous != ticket["id"],
            "ready": [t for t in involved if after[t] == "ready" != before[t]],
            "reopened": [t for t in involved if before[t] in ("ready", "published") and after[t] == "open"]}


def view(state: Reader, ticket: dict) -> dict:
    tasks = readable(state, ticket["tasks"], get_task)
    done = sum(1 for t in tasks if t["status"] == "done")
    return {**ticket, "done": done, "total": len(ticket["tasks"])}


def list_tickets(state: Reader, set_aside: stored.SetAside | None = None) -> list[dict]:
    rows = [view(state, ticket) for ticket in readable(state, ticket_ids(state), get_ticket, set_aside)]
    return sorted(rows, key=lambda r: (r["created"], r["id"]))
