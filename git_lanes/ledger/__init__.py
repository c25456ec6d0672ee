"""The ref-backed JSON op log (DESIGN.md §2): generic, versioned, appended under the local lock with a
compare-and-swap of `refs/lanes/ledger`. The coordination model's rules live in the domain layer's fold."""

from git_lanes.ledger.log import (Appended, Fold, append, apply_op, head, last_change, ops_between, read_op,
                                  refusal, state_at)
from git_lanes.ledger.op import Op, make_op
from git_lanes.model.format import FORMAT_VERSION as FORMAT
from git_lanes.ledger.state import State, Tx

__all__ = ["FORMAT", "Appended", "Fold", "Op", "State", "Tx", "append", "apply_op", "head",
           "last_change", "make_op", "ops_between", "read_op", "refusal", "state_at"]
