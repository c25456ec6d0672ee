"""Where tasks and tickets live in the ledger's tree, and the rules both follow: reading one by id, resolving
a unique id prefix, validating a title, saving a task with its version bumped. `tasks` and `tickets` both
build on this module, so neither needs the other's internals (they once imported each other)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from git_lanes.domain import stored
from git_lanes.domain.agents import Reader
from git_lanes.errors import MalformedRecord, NotFound, UserError, command
from git_lanes.ledger import Op, Tx
from git_lanes.model.coordination import MAX_TITLE
from git_lanes.model.ids import LedgerId
from git_lanes.model.names import id_text, resolve_prefix, shown_id
from git_lanes.model.text import check_text

TASKS_HINT = f"see {command('task list')}"
TICKETS_HINT = f"see {command('ticket list')}"


def task_path(task_id: str) -> str:
    return f"tasks/{task_id[:2]}/{task_id}.json"


def ticket_path(ticket_id: str) -> str:
    return f"tickets/{ticket_id}.json"


def task_ids(state: Reader, prefix: str = "") -> list[str]:
    buckets = [prefix[:2]] if len(prefix) >= 2 else [b for b in state.names("tasks") if b.startswith(prefix)]
    return [name[:-5] for bucket in buckets for name in state.names(f"tasks/{bucket}")
            if name.startswith(prefix) and name.endswith(".json")]


def ticket_ids(state: Reader) -> list[str]:
    return [n[:-5] for n in state.names("tickets") if n.endswith(".json")]


def _resolve(prefix: str, candidates: list[str], what: str, hint: str) -> str:
    """A task or ticket id from a unique prefix; anything that cannot begin an id is simply not found."""
    prefix = id_text(prefix, what).strip().lower()
    code = f"unknown_{what}"
    if not prefix or prefix.strip("0123456789abcdef"):
        raise NotFound(f"no {what} matches {shown_id(prefix)}", code=code, hint=hint)
    return resolve_prefix(prefix, candidates, what, hint, code)


def resolve_task(state: Reader, prefix: str) -> str:
    return _resolve(prefix, task_ids(state, id_text(prefix, "task").strip().lower()), "task", TASKS_HINT)


def resolve_ticket(state: Reader, prefix: str) -> str:
    return _resolve(prefix, ticket_ids(state), "ticket", TICKETS_HINT)


def _get(state: Reader, path: str | None, what: str, item_id: object, hint: str) -> dict[str, Any]:
    record = state.get(path) if path is not None else None
    if record is None or path is None:
        # worded as for a prefix that matches nothing: to whoever typed it, a whole id is one such prefix
        shown = shown_id(item_id) if isinstance(item_id, str) else repr(item_id)
        raise NotFound(f"no {what} matches {shown}", code=f"unknown_{what}", hint=hint)
    return stored.checked(path, record)


def readable(state: Reader, ids: list[str], get: Callable[[Reader, str], dict[str, Any]],
             set_aside: stored.SetAside | None = None) -> list[dict[str, Any]]:
    """The records of `ids` (tasks or tickets), leaving out those that cannot be read (noted in `set_aside`):
    one bad record a peer pushed must not take a whole listing down (`git lanes doctor` lists it)."""
    found = []
    for item_id in ids:
        try:
            found.append(get(state, item_id))
        except MalformedRecord as exc:  # one of a newer format fails the listing: upgrade to read it
            if set_aside is not None:
                stored.note(set_aside, task_path(item_id) if get is get_task else ticket_path(item_id), exc)
    return found


def get_task(state: Reader, task_id: object) -> dict[str, Any]:
    path = task_path(task_id) if isinstance(task_id, str) and LedgerId.valid(task_id) else None
    return _get(state, path, "task", task_id, TASKS_HINT)


def get_ticket(state: Reader, ticket_id: object) -> dict[str, Any]:
    path = ticket_path(ticket_id) if isinstance(ticket_id, str) and LedgerId.valid(ticket_id) else None
    return _get(state, path, "ticket", ticket_id, TICKETS_HINT)


def validate_title(title: object, limit: int = MAX_TITLE, what: str = "the title", kind: str = "title") -> str:
    """A task's or ticket's title (or a block reason: `what`, refused as `empty_reason`/`invalid_reason` with
    kind "reason"): one line of text, at most `limit` characters."""
    if not isinstance(title, str) or not title.strip():
        raise UserError(f"{what} must not be empty", code=f"empty_{kind}")
    return check_text(title.strip(), what, code=f"invalid_{kind}", max_chars=limit)


def save_task(tx: Tx, op: Op, task: dict[str, Any]) -> dict[str, Any]:
    """Write `task` back with its version bumped: every change to a task is one new version, which a claim
    can name to be sure nothing moved since it read the task."""
    task["version"] = int(task["version"]) + 1
    task["updated"] = op.time
    tx.put(task_path(task["id"]), task)
    return task
