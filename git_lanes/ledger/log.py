"""The ledger: `refs/lanes/ledger`, a chain of commits, one per op. Every `CHECKPOINT_EVERY`-th commit's tree is
the materialized state after its op; the commits between (deltas) carry the records their op wrote in their
message (model/ledger_delta.py), so reading any state is one tree and at most `CHECKPOINT_EVERY - 1` messages,
never a replay of the fold. A delta's tree is the whole state too, so plain git shows any record at any commit
(`git show refs/lanes/ledger:PATH`), except within a burst (`BURST`): there a delta keeps its checkpoint's
tree and an append writes one object, its commit, instead of the five to eight the whole tree costs.

These functions are the contract the sync layer builds on:

- `read_op(store, commit) -> Op` parses one ledger commit.
- `ops_between(store, ancestor, head) -> list[Op]` lists the ops after `ancestor` up to `head`, oldest first.
- `apply_op(store, base_head, op, fold) -> (new_head | None, result_or_refusal)` applies an existing op (keeping its
  id, actor, time and args) on top of `base_head`, writing objects but moving no ref.
- `append(store, op, fold)` (ledger/combine.py) is the local write: lock, apply on the current head (with the
  ops of writers waiting for the lock), compare-and-swap the ref.

The fold decides each op from the state it reads and the op alone (its time included), never from the clock
or the environment, so replaying the same op on the same state gives the same records and result; whether
its commit is a checkpoint depends only on the base's distance from its own."""

from __future__ import annotations

from time import monotonic

from git_lanes.errors import LanesError, UnsupportedFormat, problem
from git_lanes.ledger.op import Op, decode_message, encode_message, newer_format
from git_lanes.ledger.state import State
from git_lanes.model import ledger_delta
from git_lanes.model.frozen import Frozen
from git_lanes.model.ledger_delta import CHECKPOINT_EVERY, Materialized
from git_lanes.model.refs import LEDGER

TYPE_CHECKING = False  # the light sync path reads the ledger without loading pygit2, nor typing
if TYPE_CHECKING:
    from typing import Any, Protocol

    from git_lanes.ledger.state import Record
    from git_lanes.store import Store
    from git_lanes.store.values import CommitInfo
    from git_lanes.store.records import Signatures
else:
    Protocol = object  # Fold below is a protocol for the type checker; at run time a plain name to import

# About once in this many appends (chosen by the op's random id, so concurrent writers spread it) the
# appender asks git whether the repository needs packing (`git gc --auto`).
MAINTENANCE_EVERY = 500
CAS_ATTEMPTS = 5
MISSING = "missing_object"  # the code of a state that cannot be read for a commit the repository lacks
NOT_A_COMMIT = "not_a_commit"  # ... and for an object there that is no commit
AGENT_EMAIL = "agent@lanes"  # a ledger commit's author is the op's actor


class Fold(Protocol):
    """The model's rules: decide one op against a state. `apply` returns the record edits (path -> record or
    None to delete) and the op's result, or raises a LanesError to refuse the op; it must depend only on the
    state and the op. `summary` is the one-line description `git log --oneline` shows."""

    def apply(self, state: State, op: Op) -> tuple[dict[str, Record | None], dict[str, Any]]: ...

    def summary(self, op: Op, result: dict[str, Any]) -> str: ...


class Appended(Frozen):
    op: Op
    commit: str


def head(store: Store) -> str | None:
    """The ledger's head commit, or None before the first op."""
    return store.read_ref(LEDGER)


def state_at(store: Store, commit: str | None) -> State:
    """The state after the op at `commit` (the empty state for None)."""
    return State(store, at=materialized(store, commit))


def materialized(store: Store, commit: str | None) -> Materialized:
    def read(oid: str) -> tuple[str, str | None, str]:
        info = _commit(store, oid)
        return info.tree, info.parents[0] if info.parents else None, info.message

    return ledger_delta.materialize(commit, read)


def state_tree(store: Store, commit: str) -> str:
    """A tree holding the whole state after ledger commit `commit`: its own for a checkpoint, else its last
    checkpoint's with the records since written in (what the next checkpoint commit will hold)."""
    at = materialized(store, commit)
    if at.tree is not None and not at.overlay:
        return at.tree
    return store.write_record_tree(at.tree, _encoded(at.overlay))


def _encoded(records: dict[str, Record | None]) -> dict[str, bytes | None]:
    from git_lanes.ledger.record_json import encode_record  # loaded by the first checkpoint, not by readers

    return {path: None if record is None else encode_record(record) for path, record in records.items()}


def is_checkpoint(store: Store, commit: str) -> bool:
    """Whether ledger commit `commit`'s tree is the whole state after its op."""
    return ledger_delta.edits_of(store.commit_info(commit).message, commit) is None


def unaware_checkpoints(store: Store, head_commit: str, limit: int = 2_000) -> list[tuple[str, int]]:
    """Commits among the newest `limit` that hold a full tree on a delta parent fewer than
    `CHECKPOINT_EVERY - 1` commits from its checkpoint, each with that count. This git-lanes checkpoints at
    exactly that distance; a git-lanes from before delta commits writes a full tree on every op, reading the
    parent's tree (its last checkpoint's) as the whole state, so the records of the deltas between are
    missing from that commit's state and every state after it (doctor warns: nothing can tell which of them
    its op would have kept)."""
    found: list[tuple[str, int]] = []
    newer: str | None = None  # the last commit with a full tree seen, walking back (None: a newer format's)
    deltas = 0  # delta commits seen since it
    commit: str | None = head_commit
    for _ in range(limit):
        if commit is None:
            break
        info = store.commit_info(commit)
        try:
            delta = ledger_delta.edits_of(info.message, commit) is not None
        except UnsupportedFormat:
            delta = True  # edits, if unreadable ones: reads report them
        if delta:
            deltas += 1
        else:
            if newer is not None and 0 < deltas < CHECKPOINT_EVERY - 1:
                found.append((newer, deltas))
            # an op of a newer format is a newer git-lanes's to judge (`newer_ops`), not an older one's slip
            newer, deltas = (commit if newer_format(info.message) is None else None), 0
        commit = info.parents[0] if info.parents else None
    return found


def newer_ops(store: Store, head_commit: str, limit: int = 2_000) -> list[tuple[str, int]]:
    """Commits among the newest `limit` holding an op of a format newer than this git-lanes reads (a peer's
    newer git-lanes), each with that format: this version reads such a commit's tree as the whole state."""
    found: list[tuple[str, int]] = []
    commit: str | None = head_commit
    for _ in range(limit):
        if commit is None:
            break
        info = store.commit_info(commit)
        format_found = newer_format(info.message)
        if format_found is not None:
            found.append((commit, format_found))
        commit = info.parents[0] if info.parents else None
    return found


def read_op(store: Store, commit: str) -> Op:
    """Parse ledger commit `commit` into its Op (id, type, actor, time, args, and the result recorded there).

    Raises UnsupportedFormat for a commit that holds no op or an op in an unknown major format, or that this
    repository lacks."""
    return decode_message(_commit(store, commit).message, commit)


def _commit(store: Store, oid: str) -> CommitInfo:
    try:
        return store.commit_info(oid)
    except KeyError:  # a ref or a delta's way back to its checkpoint names a commit this repository lacks
        raise UnsupportedFormat(f"ledger commit {oid[:8]} cannot be read: it is missing", code=MISSING,
                                hint="run `git fsck`; the repository may be damaged") from None
    except ValueError:  # the store's word for an object that is no commit (a ref set by hand to a blob or tree)
        raise UnsupportedFormat(f"ledger commit {oid[:8]} cannot be read: it is not a commit", code=NOT_A_COMMIT,
                                hint="refs/lanes/ledger was set by hand; point it back at a ledger commit "
                                     "(`git reflog refs/lanes/ledger` lists its earlier values)") from None


def ops_between(store: Store, ancestor: str | None, head_commit: str) -> list[Op]:
    """The ops of the commits after `ancestor` up to and including `head_commit`, oldest first, following
    first parents (the ledger is linear). `ancestor=None` means from the first op. Raises UnsupportedFormat
    when `ancestor` is not on `head_commit`'s chain."""
    ops: list[Op] = []
    commit: str | None = head_commit
    while commit is not None and commit != ancestor:
        info = store.commit_info(commit)
        ops.append(decode_message(info.message, commit))
        commit = info.parents[0] if info.parents else None
    if commit != ancestor:
        raise UnsupportedFormat(f"{ancestor[:8] if ancestor else '-'} is not an ancestor of ledger commit "
                                f"{head_commit[:8]}")
    ops.reverse()
    return ops


def last_change(store: Store, head_commit: str | None, stop: str, path: str) -> str | None:
    """The newest commit after `stop` up to `head_commit` whose op changed what `path` holds (None: none did).

    Each commit is read once: what a delta holds at `path` is in its own edits, a checkpoint's in its tree,
    so the walk never materializes a state per commit (each a read back to its checkpoint, 16 on average)."""
    holds: list[tuple[str, object]] = []  # newest first: (commit, what it left at `path`), where it may change
    commit = head_commit
    while commit is not None and commit != stop:
        info = store.commit_info(commit)
        edits = ledger_delta.edits_of(info.message, commit)
        if edits is None:
            holds.append((commit, State(store, info.tree).raw(path)))
        elif path in edits:
            holds.append((commit, edits[path]))
        commit = info.parents[0] if info.parents else None
    found, before = None, state_at(store, commit).raw(path)
    for commit, after in reversed(holds):
        if after != before:
            found = commit
        before = after
    return found


def apply_op(store: Store, base_head: str | None, op: Op, fold: Fold) -> tuple[str | None, dict[str, Any]]:
    """Apply `op` on top of ledger commit `base_head` (None: the empty ledger) without moving any ref.

    The op keeps its id, type, actor, time and args; the fold decides it afresh against `base_head`'s state.
    Returns `(new_commit, result)` when the op holds: `new_commit` is a ledger commit whose parent is
    `base_head`, whose tree is the state after the op, and whose message records the op with this result.
    Returns `(None, refusal)` when the fold refuses it; `refusal` is the error record (`error` code,
    `message`, optional `hint`, plus `exit_code`: 3 for a lost race or version conflict, 1 for bad input).
    Nothing is written for a refusal. Deterministic: the same (state, op) gives the same tree and result (a
    replay's delta holds the whole state, however fast the ops come)."""
    try:
        commit, recorded = _build(store, base_head, op, fold)
    except LanesError as exc:
        return None, refusal(exc)
    return commit, recorded.result or {}


def refusal(exc: LanesError) -> dict[str, Any]:
    return problem(exc)


def _build(store: Store, base: str | None, op: Op, fold: Fold, signed: Signatures | None = None, *,
           burst: bool = False) -> tuple[str, Op]:
    """`op` applied on `base` as a new commit (see `apply_op`); `burst`: the local append of a process
    appending in a burst (`in_burst`), whose delta keeps its checkpoint's tree."""
    at = materialized(store, base)
    edits, result = fold.apply(State(store, at=at), op)
    recorded = op.with_result(result)
    summary = fold.summary(recorded, result)
    parents = [base] if base else []
    author = op.actor
    if at.tree is not None and at.depth + 1 < CHECKPOINT_EVERY:
        # A delta: the records ride in the message, which is all a reader of ours needs; its tree is the
        # whole state too, for plain git, unless this process appends in a burst
        tree, records = (at.tree, {}) if burst else _whole(store, base, at, edits)
        commit = store.write_records(tree, records, parents, encode_message(recorded, summary, edits),
                                     author_name=author, author_email=AGENT_EMAIL, signed=signed)
        ledger_delta.remember(commit, at.then(edits))
        return commit, recorded
    commit = store.write_records(at.tree, _encoded({**at.overlay, **edits}), parents,
                                 encode_message(recorded, summary), author_name=author, author_email=AGENT_EMAIL,
                                 signed=signed)
    ledger_delta.remember(commit, Materialized(store.record_tree(commit), {}, 0))
    return commit, recorded


# Seconds between two appends of one process that make them a burst (a script or a bench appending in a
# loop), whose deltas keep their checkpoint's tree: the whole tree costs five to eight objects an op, which
# halved a loop's appends. An agent's appends (a CLI process each, an MCP tool call, a hook) come further
# apart, so what they write plain git shows. Writers waiting for one another's lock make a burst too
# (ledger/combine.py `_round`).
BURST = 0.05
_last_append = -1.0  # time.monotonic() of this process's last local append


def in_burst() -> bool:
    """Whether this local append comes less than `BURST` after this process's last one."""
    global _last_append
    now = monotonic()
    burst, _last_append = now - _last_append < BURST and _last_append >= 0, now
    return burst


def _whole(store: Store, base: str | None, at: Materialized,
           edits: dict[str, Record | None]) -> tuple[str | None, dict[str, bytes | None]]:
    """What a delta's tree is written from: its parent's tree and the op's records, or, where the parent's
    tree is its checkpoint's (the parent is the checkpoint, or a delta written in a burst or by an older
    git-lanes), that tree and every record since."""
    parent_tree = store.record_tree(base) if base is not None else None
    if parent_tree is not None and (parent_tree != at.tree or not at.overlay):
        return parent_tree, _encoded(edits)
    return at.tree, _encoded({**at.overlay, **edits})


def roll_up_after(store: Store, ops: int) -> None:
    """After `ops` ops applied in one go (a replay, an undo), whose checkpoints each left a small pack: the
    packs merged once there are many (`Store.upkeep`), rather than left for an append's upkeep."""
    if ops >= CHECKPOINT_EVERY:
        try:
            store.upkeep(gc=False)
        except Exception:  # packing is an optimisation; what was applied stands
            pass


def maintain(store: Store) -> None:
    """Git's upkeep after the ledger's writes (`Store.upkeep`): merge the small packs checkpoints write, and
    let `git gc --auto` pack the loose commits past `gc.auto` (6700 by default)."""
    try:
        store.upkeep()
    except Exception:  # packing is an optimisation; an append that succeeded must not report failure
        pass
