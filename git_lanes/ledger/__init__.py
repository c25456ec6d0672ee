"""The ref-backed JSON op log (DESIGN.md §2): generic, versioned, appended under the local lock with a
compare-and-swap of `refs/lanes/ledger`. The coordination model's rules live in the domain layer's fold."""

from __future__ import annotations

from git_lanes.ledger.log import (Appended, Fold, apply_op, head, last_change, ops_between, read_op, refusal,
                                  state_at)
from git_lanes.ledger.op import Op, make_op
from git_lanes.model.format import FORMAT_VERSION as FORMAT
from git_lanes.ledger.state import State, Tx

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from git_lanes.store import Store


# ledger/combine.py's `append` once the first append loaded it: an import in a function is thousands of
# instructions at every call, a twentieth of an append's once they were counted.
_local_write: Callable[[Store, Op, Fold], Appended] | None = None


def append(store: Store, op: Op, fold: Fold) -> Appended:
    """The local write (ledger/combine.py `append`), loaded by the first append: readers never load it."""
    global _local_write
    if _local_write is None:
        from git_lanes.ledger.combine import append as appended

        _local_write = appended
    return _local_write(store, op, fold)


__all__ = ["FORMAT", "Appended", "Fold", "Op", "State", "Tx", "append", "apply_op", "head",
           "last_change", "make_op", "ops_between", "read_op", "refusal", "state_at"]
