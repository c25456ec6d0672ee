"""What a ledger replay must translate for the coordination model: board positions.

Posts are numbered in the ledger's one order, so replaying local ops after the remote's renumbers the local
posts, and an op that names a position would name the wrong one: `board.resolve` of a local post, and the
read cursors of `board.read` and `wake.take`. A cursor is a high-water mark; once the remote's posts sit
between the merge base and the local ones, no mark covers what the agent saw without covering posts it never
saw, so the cursor falls back to the merge base: the agent may see its local posts twice but never misses
one (at least once, never lost)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from git_lanes import ledger
from git_lanes.domain.board_index import current_seq
from git_lanes.ledger import Op
from git_lanes.model.frozen import replace
from git_lanes.store import Store

CURSOR_OPS = ("board.read", "wake.take")


class BoardRebase:
    def __init__(self, store: Store, base: str | None, remote: str) -> None:
        self.base_seq = current_seq(ledger.state_at(store, base))
        self.remote_posted = current_seq(ledger.state_at(store, remote)) > self.base_seq
        self.moved: dict[int, int] = {}  # a local post's seq before the replay -> after

    def op(self, op: Op) -> Op:
        if op.type == "board.resolve":
            post = op.args.get("post")
            if isinstance(post, int) and post in self.moved:
                return replace(op, args={**op.args, "post": self.moved[post]})
        if op.type in CURSOR_OPS:
            through = op.args.get("through")
            if isinstance(through, int) and through > self.base_seq:
                moved = self.base_seq if self.remote_posted else self.moved.get(through, through)
                return replace(op, args={**op.args, "through": moved})
        return op

    def applied(self, original: Op, result: dict[str, Any]) -> None:
        before = (original.result or {}).get("post")
        if original.type == "board.post" and isinstance(before, int) and isinstance(result.get("post"), int):
            self.moved[before] = result["post"]


def rebase_for(store: Store) -> Callable[[str | None, str], BoardRebase]:
    return lambda base, remote: BoardRebase(store, base, remote)
