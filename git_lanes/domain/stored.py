"""The shape every coordination record in the ledger must have, checked where the domain reads one.

A peer's ledger fast-forwards as is, so a record may hold anything (`"depends": 5`). A record that is not
what its concept's model record says is a `MalformedRecord` (model/record.py's `Record.decode`): reading it
by id says so clearly, a listing sets it aside, shows the rest and says what it left out (`set_aside`), and
`git lanes doctor` lists every one (`unreadable`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from git_lanes.errors import MalformedRecord, UnsupportedFormat
from git_lanes.ledger import State
from git_lanes.ledger.state import MALFORMED_HINT
from git_lanes.model.coordination import (Agent, ClaimSet, DirtySet, ExclusiveClaim, OpenQuestions, Post,
                                          ReadPosition, RetractedPosts, Task, Ticket, WakeQueue)
from git_lanes.model.record import Unreadable
from git_lanes.model.refs import LEDGER

if TYPE_CHECKING:
    from git_lanes.ledger import Tx


class Shape(Protocol):
    """What a record of the ledger must read as: a model record, or a light one the agent-hook path reads
    too (a budget, a lane's ports), each with the one `decode` that says MalformedRecord."""

    def decode(self, data: Any, what: str, hint: str | None = None) -> Any: ...


class _Deferred:
    """A shape whose module loads with the first record read as it: the commands that read tasks or the board
    (and load this module) need none of these."""

    def __init__(self, load: Callable[[], Shape]) -> None:
        self._load = load

    def decode(self, data: Any, what: str, hint: str | None = None) -> Any:
        return self._load().decode(data, what, hint)


def _budget() -> Shape:
    from git_lanes.model.budgets import Budget

    return Budget


def _ports() -> Shape:
    from git_lanes.model.lane_setup import PortsHeld

    return PortsHeld


def _plan() -> Shape:
    from git_lanes.model.plan import DispatchedPlan

    return DispatchedPlan


# The top directory of a record's path → the record type it must read as (the board's posts and read
# positions share `board/`: see `shape_of`).
SHAPES: dict[str, Shape] = {"tasks": Task, "tickets": Ticket, "agents": Agent, "claims": ClaimSet,
                            "dirty": DirtySet, "wakes": WakeQueue, "board": Post, "exclusive": ExclusiveClaim,
                            "retracted": RetractedPosts, "questions": OpenQuestions, "budgets": _Deferred(_budget),
                            "ports": _Deferred(_ports), "plans": _Deferred(_plan)}
HINT = MALFORMED_HINT
# What a listing left out: {"ref", "key", "reason"}, the fields of an `Unreadable` (model/record.py).
SetAside = list[dict[str, str]]


def shape_of(path: str) -> Shape | None:
    top, _, rest = path.partition("/")
    if top == "board" and rest.startswith("readers/"):
        return ReadPosition
    return SHAPES.get(top)


def checked(path: str, record: dict[str, Any]) -> dict[str, Any]:
    """`record` (read at ledger path `path`) when it has its concept's shape; MalformedRecord otherwise."""
    shape = shape_of(path)
    if shape is not None:
        shape.decode(record, f"ledger record {path}", hint=HINT)  # a newer minor format's keys are no malformation
    return record


def read(state: State | Tx, path: str) -> dict[str, Any] | None:
    """The record at `path` (None when there is none), checked: UnsupportedFormat (a MalformedRecord for a
    wrong shape) when it cannot be read. An op reading it fails clearly rather than half way."""
    record = state.get(path)
    return None if record is None else _checked_once(state, path, record)


def peek(state: State | Tx, path: str) -> dict[str, Any] | None:
    """`read` for a caller that only looks: the record is shared with the state, not a copy to change."""
    record = state.peek(path)
    return None if record is None else _checked_once(state, path, record)


def _checked_once(state: State | Tx, path: str, record: dict[str, Any]) -> dict[str, Any]:
    """`checked`, once per state and path: a post is read three times by the op that follows it, and decoding
    its model record is most of the cost of reading it. Only a record that passed is remembered, so one
    that fails fails every time."""
    memo = state.memo_for(path)
    if memo is None:
        return checked(path, record)
    passed = memo.setdefault("checked", set())
    if path not in passed:
        checked(path, record)
        passed.add(path)
    return record


def read_or_set_aside(state: State | Tx, path: str, set_aside: SetAside | None) -> dict[str, Any] | None:
    """`read` for a listing: a malformed record is noted in `set_aside` and left out (None), so the rest still
    shows; without `set_aside` (an op, a read by id) it is the error. A record of a newer format is always
    the error: this git-lanes must be upgraded to read it (DESIGN §1)."""
    try:
        return read(state, path)
    except MalformedRecord as exc:
        if set_aside is None:
            raise
        note(set_aside, path, exc)
        return None


def note(set_aside: SetAside, path: str, exc: UnsupportedFormat) -> None:
    if all(row["key"] != path for row in set_aside):
        set_aside.append({"ref": LEDGER, "key": path, "reason": exc.message})


def unreadable(state: State) -> list[Unreadable]:
    """Every record under the shaped directories that cannot be read, with why."""
    found = []
    for directory in SHAPES:
        for path in state.files(directory):
            try:
                read(state, path)
            except UnsupportedFormat as exc:
                found.append(Unreadable(LEDGER, path, exc.message))
    return found
