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
    from git_lanes.store import Store


def append(store: Store, op: Op, fold: Fold) -> Appended:
    """The local write (ledger/combine.py `append`), loaded by the first append: readers never load it."""
    from git_lanes.ledger.combine import append as appended

    return appended(store, op, fold)


__all__ = ["FORMAT", "Appended", "Fold", "Op", "State", "Tx", "append", "apply_op", "head",
           "last_change", "make_op", "ops_between", "read_op", "refusal", "state_at"]
