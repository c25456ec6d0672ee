"""What a ledger replay must translate for the coordination model: board positions.

Posts are numbered in the ledger's one order, so replaying local ops after the remote's renumbers the local
posts, and an op that names a position would name the wrong one: `board.resolve` and `board.answer` of a local
post, and the
read cursors of `board.read` and `wake.take`, and an `op.undo` of a local post (its inverse op names the post's
record by its path and numbered content, and the `board.retractions` op after an undo's inverse ops, which
names the posts by number). A cursor is a high-water mark; once the remote's posts sit
between the merge base and the local ones, no mark covers what the agent saw without covering posts it never
saw, so the cursor falls back to the merge base: the agent may see its local posts twice but never misses
one (at least once, never lost)."""

from __future__ import annotations

from typing import Any

from git_lanes import ledger
from git_lanes.domain.board_index import RETRACTIONS, current_seq, post_path
from git_lanes.ledger import Op
from git_lanes.model.frozen import replace
from git_lanes.store import Store

TYPE_CHECKING = False  # collections.abc for annotations only: collections costs a light sync ~1 ms
if TYPE_CHECKING:
    from collections.abc import Callable

CURSOR_OPS = ("board.read", "wake.take")
# What numbers a post in the board's order: a replay changes these and nothing else of a post it moves.
NUMBERING = ("seq", "broadcasts")


class BoardRebase:
    def __init__(self, store: Store, base: str | None, remote: str) -> None:
        self.store = store
        self.base_seq = current_seq(ledger.state_at(store, base))
        self.remote_posted = current_seq(ledger.state_at(store, remote)) > self.base_seq
        self.moved: dict[int, int] = {}  # a local post's seq before the replay -> after

    def op(self, op: Op, head: str) -> Op:
        if op.type == "op.undo" and self.moved:
            return self._undo(op, head)
        if op.type == RETRACTIONS and self.moved and isinstance(op.args.get("posts"), list):
            # the posts an undo's inverse ops retracted, named by number: they move with the posts
            return replace(op, args={**op.args, "posts": [self.moved.get(seq, seq) if type(seq) is int else seq
                                                          for seq in op.args["posts"]]})
        if op.type in ("board.resolve", "board.answer"):
            post = op.args.get("post")
            if isinstance(post, int) and post in self.moved:
                return replace(op, args={**op.args, "post": self.moved[post]})
        if op.type in CURSOR_OPS:
            through = op.args.get("through")
            if isinstance(through, int) and through > self.base_seq:
                moved = self.base_seq if self.remote_posted else self.moved.get(through, through)
                return replace(op, args={**op.args, "through": moved})
        return op

    def _undo(self, op: Op, head: str) -> Op:
        """An undo of a local post (or of its resolution, or a redo) names the post's path and the record it
        expects there: both move with the post. Anything else of the record that differs from the post
        where it landed is a real change since, which the fold refuses, naming it."""
        changes = op.args.get("changes")
        if not isinstance(changes, list):
            return op  # malformed: the fold says so
        state = None
        moved = []
        for change in changes:
            seq = _post_seq(change.get("path")) if isinstance(change, dict) else None
            expect = change.get("expect") if seq in self.moved else None
            if seq is None or not isinstance(expect, dict):
                moved.append(change)
                continue
            state = state or ledger.state_at(self.store, head)
            path = post_path(self.moved[seq])
            landed = state.get(path)
            if not isinstance(landed, dict) or _unnumbered(landed) != _unnumbered(expect):
                moved.append(change)
                continue
            restore = change.get("restore")
            numbered = {key: landed[key] for key in NUMBERING if key in landed}
            moved.append({**change, "path": path, "expect": landed,
                          "restore": {**restore, **numbered} if isinstance(restore, dict) else restore})
        return replace(op, args={**op.args, "changes": moved})

    def applied(self, original: Op, result: dict[str, Any]) -> None:
        before = (original.result or {}).get("post")
        if original.type == "board.post" and isinstance(before, int) and isinstance(result.get("post"), int):
            self.moved[before] = result["post"]


def _post_seq(path: object) -> int | None:
    """The number of the post whose record is at `path`, or None for any other path."""
    if not isinstance(path, str) or not path.endswith(".json"):
        return None
    name = path.rsplit("/", 1)[-1][:-5]
    return int(name) if name.isdigit() and path == post_path(int(name)) else None


def _unnumbered(record: dict) -> dict:
    return {key: value for key, value in record.items() if key not in NUMBERING}


def rebase_for(store: Store) -> Callable[[str | None, str], BoardRebase]:
    return lambda base, remote: BoardRebase(store, base, remote)
