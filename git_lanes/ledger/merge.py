"""Merging two ledgers (DESIGN.md §2): the remote's head is the linearization point, so the local-only ops are
replayed on top of it, in their order. An op that no longer holds there (a task someone else claimed first)
is not lost: a `refused` op takes its place, naming its actor, the original op and the refusal, so the
actor learns of it on its next heartbeat. The result descends from the remote head: a fast-forward for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from git_lanes.errors import UnsupportedFormat
from git_lanes.ledger.log import Fold, apply_op, ops_between
from git_lanes.ledger.op import Op, make_op
from git_lanes.store import Store
from git_lanes.store.remote import count_between

REFUSED = "refused"


class Rebase(Protocol):
    """The model's knowledge of arguments that name a position in the log (a post's sequence number, a read
    cursor), which a replay on another head renumbers. Generic ids (op ids) need none."""

    def op(self, op: Op) -> Op:
        """The op to apply on the new head, its positional arguments translated."""
        ...

    def applied(self, original: Op, result: dict[str, Any]) -> None:
        """Learn where a replayed op landed (`original.result` is where it had landed before)."""
        ...


@dataclass(frozen=True)
class Replay:
    head: str
    came_in: int
    replayed: int
    # one record per op that no longer held: {"id", "type", "actor", "time", "args", "refusal", "refused_as"}
    refused: list[dict[str, Any]] = field(default_factory=list)


def refused_op(op: Op, refusal: dict[str, Any]) -> Op:
    """The op recorded in place of `op`: same actor and time, the original op and why it failed as args."""
    return make_op(REFUSED, op.actor, {"op": op.to_dict(), "refusal": refusal}, op.time)


def replay(store: Store, local: str, remote: str, fold: Fold,
           rebase: Callable[[str | None, str], Rebase] | None = None) -> Replay:
    """Replay the ops of `local` that `remote` lacks on top of `remote`, writing commits but moving no ref.
    `rebase(merge_base, remote)` gives the model's translation of positional arguments, if it has any."""
    base = store.merge_base(local, remote)
    came_in = count_between(store, base, remote)
    translate = rebase(base, remote) if rebase else None
    head = remote
    replayed = 0
    refused = []
    for original in ops_between(store, base, local):
        op = translate.op(original) if translate else original
        new_head, result = apply_op(store, head, op, fold)
        if new_head is None:
            stand_in = refused_op(op, result)
            new_head, recorded = apply_op(store, head, stand_in, fold)
            if new_head is None:
                raise UnsupportedFormat(f"cannot record that ledger op {op.id} ({op.type}) was refused: "
                                        f"{recorded.get('message')}", code="ledger_replay_failed",
                                        hint="upgrade git-lanes on this machine")
            refused.append({"id": op.id, "type": op.type, "actor": op.actor, "time": op.time, "args": op.args,
                            "refusal": result, "refused_as": stand_in.id})
        else:
            replayed += 1
            if translate:
                translate.applied(original, result)
        head = new_head
    return Replay(head, came_in, replayed, refused)
