"""The ledger ops an operation-log entry covers: those it recorded one by one (what a command appended), and
those of its ledger spans (what a sync brought in), read from the ledger's commits when asked."""

from __future__ import annotations

from git_lanes.domain.context import Context
from git_lanes.errors import LanesError, UnsupportedFormat
from git_lanes.model.oplog import LedgerStep, OpEntry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from git_lanes.store import Store
    from git_lanes.store.values import CommitInfo


def of_entry(ctx: Context, entry: OpEntry) -> tuple[LedgerStep, ...]:
    """Every ledger op `entry` covers, in the order they were appended. A span whose ends are gone (pruned by
    git gc long after a replay left no ref on them) covers none: there is no line left to read them from."""
    if not entry.ledger_spans:
        return entry.ledger
    steps = list(entry.ledger)
    for span in entry.ledger_spans:
        steps += between(ctx, span.old, span.new)
    return tuple(steps)


def between(ctx: Context, old: str | None, new: str | None) -> list[LedgerStep]:
    """The ops of `new`'s commits that `old` lacks, oldest first, down the ledger's line of first parents.
    When `old` is not on that line (a sync that replayed local ops on top of the remote's), the walk stops
    where the two histories meet, not at the ledger's first op."""
    store = ctx.store
    steps: list[LedgerStep] = []
    here: set[str] = set()
    try:
        info = store.commit_info(new) if new is not None else None
        stop = old
        if info is not None and old is not None and old not in info.parents:  # (an append: nothing to find)
            if store.object_kind(old) != "commit":
                return []  # gone (pruned long after a replay left no ref on it): no line to read the ops from
            if not store.is_ancestor(old, info.oid):
                stop = store.merge_base(old, info.oid)
                # The local ops the replay put back on top keep their ids: they were here before the move, each
                # recorded (and undone) on its own, so undoing the sync must not retract them too.
                here = {step.id for step in _walk(store, store.commit_info(old), stop)}
        for step in _walk(store, info, stop):
            if step.id not in here:
                steps.append(step)
    except (LanesError, KeyError):  # a commit not here (pruned, a shallow history): what was read is all there is
        pass
    steps.reverse()
    return steps


def _walk(store: Store, info: CommitInfo | None, stop: str | None) -> Iterator[LedgerStep]:
    """The ops from `info` down the line of first parents to `stop` (excluded), newest first."""
    from git_lanes.ledger.op import op_identity  # the ledger loads only when it moved

    while info is not None and info.oid != stop:
        try:
            op_id, op_type = op_identity(info.message, info.oid)
            yield LedgerStep(op_id, op_type, info.oid)
        except UnsupportedFormat:
            # A peer's commit that holds no op this version reads (one an older git-lanes cut at a NUL, or a
            # newer format's): nothing an undo could reverse.
            pass
        info = store.commit_info(info.parents[0]) if info.parents else None
