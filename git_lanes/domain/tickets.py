"""Tickets group tasks. When every task of a ticket is done, a `ticket_ready` post appears on the board (a
record for whoever publishes the work: never counted unread, never a wake)."""

from __future__ import annotations

from git_lanes.domain.agents import SYSTEM, Reader
from git_lanes.domain.board import add_post
from git_lanes.errors import NotFound, UserError
from git_lanes.ledger import Op, Tx
from git_lanes.model.names import resolve_prefix

MAX_TITLE = 200


def ticket_path(ticket_id: str) -> str:
    return f"tickets/{ticket_id}.json"


def ticket_ids(state: Reader) -> list[str]:
    return [n[:-5] for n in state.names("tickets") if n.endswith(".json")]


def resolve_ticket(state: Reader, prefix: str) -> str:
    prefix = prefix.strip().lower()
    if not prefix or any(c not in "0123456789abcdef" for c in prefix):
        raise NotFound(f"no ticket matches {prefix!r}", code="unknown_ticket", hint="see `git lanes ticket list`")
    return resolve_prefix(prefix, ticket_ids(state), "ticket", "see `git lanes ticket list`", "unknown_ticket")


def get_ticket(state: Reader, ticket_id: object) -> dict:
    record = state.get(ticket_path(ticket_id)) if isinstance(ticket_id, str) and ticket_id else None
    if record is None:
        raise NotFound(f"no ticket {ticket_id!r}", code="unknown_ticket", hint="see `git lanes ticket list`")
    return record


def open_ticket(tx: Tx, op: Op) -> dict:
    title = op.args.get("title")
    if not isinstance(title, str) or not title.strip():
        raise UserError("the title must not be empty", code="empty_title")
    if "\n" in title.strip() or len(title) > MAX_TITLE:
        raise UserError(f"the title must be one line of at most {MAX_TITLE} characters", code="invalid_title")
    tx.put(ticket_path(op.id), {"id": op.id, "title": title.strip(), "tasks": [], "status": "open",
                                "created": op.time, "created_by": op.actor, "ready_at": None})
    return {"ticket": op.id}


def attach(tx: Tx, op: Op, ticket_id: str, task: dict) -> None:
    """Make `task` (a record already in `tx`) part of ticket `ticket_id`, leaving any ticket it was in."""
    from git_lanes.domain.tasks import task_path

    previous = task.get("ticket")
    ticket = get_ticket(tx, ticket_id)
    if previous == ticket_id:
        return
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
    from git_lanes.domain.tasks import get_task

    ticket = get_ticket(tx, ticket_id)
    all_done = bool(ticket["tasks"]) and all(get_task(tx, t)["status"] == "done" for t in ticket["tasks"])
    if all_done and ticket["status"] != "ready":
        ticket.update(status="ready", ready_at=op.time)
        tx.put(ticket_path(ticket_id), ticket)
        add_post(tx, op, SYSTEM, "ticket_ready", f"ticket {ticket_id[:8]} \"{ticket['title']}\": all "
                 f"{len(ticket['tasks'])} tasks are done", None)
        return ticket_id
    if not all_done and ticket["status"] == "ready":
        ticket.update(status="open", ready_at=None)
        tx.put(ticket_path(ticket_id), ticket)
    return None


def link(tx: Tx, op: Op) -> dict:
    from git_lanes.domain.tasks import get_task, task_path

    ticket = get_ticket(tx, op.args.get("ticket"))
    task = get_task(tx, op.args.get("task"))
    previous = task.get("ticket")
    attach(tx, op, ticket["id"], task)
    if previous != ticket["id"]:
        updated = get_task(tx, task["id"])
        updated.update(version=int(updated["version"]) + 1, updated=op.time)
        tx.put(task_path(task["id"]), updated)
    return {"ticket": ticket["id"], "task": task["id"], "previous": previous, "linked": previous != ticket["id"]}


def view(state: Reader, ticket: dict) -> dict:
    from git_lanes.domain.tasks import get_task

    tasks = [get_task(state, t) for t in ticket["tasks"]]
    done = sum(1 for t in tasks if t["status"] == "done")
    return {**ticket, "done": done, "total": len(tasks)}


def list_tickets(state: Reader) -> list[dict]:
    rows = [view(state, get_ticket(state, t)) for t in ticket_ids(state)]
    return sorted(rows, key=lambda r: (r["created"], r["id"]))
