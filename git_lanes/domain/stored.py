"""The shape every coordination record in the ledger must have, checked where the domain reads one.

A peer's ledger fast-forwards as is, so a record may hold anything (`"depends": 5`). A record that is not
what its concept's model record says is a `MalformedRecord`: reading it by id says so clearly, a listing
sets it aside and shows the rest, and `git lanes doctor` lists every one (`unreadable`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from git_lanes.errors import UnsupportedFormat
from git_lanes.ledger import State
from git_lanes.model.coordination import Agent, Task, Ticket
from git_lanes.model.record import Record
from git_lanes.model.refs import LEDGER

if TYPE_CHECKING:
    from git_lanes.model.results import Unreadable

# The top directory of a record's path → the record type it must read as.
SHAPES: dict[str, type[Record]] = {"tasks": Task, "tickets": Ticket, "agents": Agent}
HINT = "a peer's ledger holds it; `git lanes doctor` lists every unreadable record"


def checked(path: str, record: dict[str, Any]) -> dict[str, Any]:
    """`record` (read at ledger path `path`) when it has its concept's shape; MalformedRecord otherwise."""
    shape = SHAPES.get(path.partition("/")[0])
    if shape is not None:
        shape.decode(record, f"ledger record {path}", hint=HINT)  # a newer minor format's keys are no malformation
    return record


def unreadable(state: State) -> list[Unreadable]:
    """Every record under the shaped directories that cannot be read, with why."""
    from git_lanes.model.results import Unreadable  # for doctor only: listings need no result records

    found = []
    for directory in SHAPES:
        for path in state.files(directory):
            try:
                record = state.get(path)
                if record is not None:
                    checked(path, record)
            except UnsupportedFormat as exc:
                found.append(Unreadable(LEDGER, path, exc.message))
    return found

