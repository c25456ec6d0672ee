"""Appends under contention: whoever holds the writers' lock applies the ops of every writer waiting for it.

A writer that finds the lock free applies its op, as a lone writer always did. One that finds it taken
leaves its op in the append queue (store/append_queue.py) and sleeps. The holder, once its own op is in,
applies the queued ops in rounds: each op decided by the fold against the state the ones before it left,
each its own commit with its own author, committer and times, one move of the ledger per round; each waiter
finds its outcome (its commit and result, or the fold's refusal) when it is woken. While ops keep coming the
holder stays (a moment's pause for the next, at most BATCH ops or TURN_SECONDS a turn), so the state stays in
one warm process. Without this, each of eight writers on two cores took the lock in turn and first read the
commits, records and folders the seven others had written since its last op (1.1-1.4 ms a turn, most of it
that reading); the holder now reads nothing it did not just write.

The guarantees are a lone writer's: one order (the ledger's), each op applied once and decided against the
state before it, a refused op changing nothing, and nothing applied for a writer that died waiting (its entry
is dropped). An operation being recorded (the op log observes what its thread moves) appends alone, so its
entry holds its ops and no one else's. The one new window is the holder's death between moving the ledger
and leaving the outcomes: it journals the round first, and the next holder settles it from what the ledger
holds (`recover`)."""

from __future__ import annotations

import sys
import time as _time
from contextlib import contextmanager

from git_lanes import errors
from git_lanes.errors import Conflict, InternalError, LanesError
from git_lanes.ledger.log import (AGENT_EMAIL, CAS_ATTEMPTS, MAINTENANCE_EVERY, Appended, _build, head, in_burst,
                                  maintain)
from git_lanes.ledger.op import Op, op_identity
from git_lanes.model.refs import LEDGER
from git_lanes.store import RefUpdate
from git_lanes.store.append_queue import JOURNAL

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from git_lanes.ledger.log import Fold
    from git_lanes.store import Store
    from git_lanes.store.append_queue import AppendQueue, Listener
    from git_lanes.store.records import Signatures

# A holder's turn ends after this many ops, or this long, or once no op came during a pause of PAUSE_SECONDS:
# its own caller waits for the turn to end, and every other waiter is served within it.
BATCH = 256
TURN_SECONDS = 0.05
PAUSE_SECONDS = 0.002
# A waiter looks again this often without being woken: only a writer holding the lock for something other
# than an append (a sync, an undo) lets it go without waking the next waiter.
RECHECK_SECONDS = 0.05
# How far back `recover` looks for a dead holder's ops when the ledger moved since (a sync replayed them).
RECOVER_DEPTH = 1024

# What a holder leaves a waiter (`_round`'s outcomes: commit and result since 7f87c12, the whole op before),
# named in every entry: a holder serves only writers that read what it writes. Bump it when that changes.
OUTCOME_FORMAT = 2

Queued = list[tuple[str, Op, "Signatures"]]


def append(store: Store, op: Op, fold: Fold) -> Appended:
    """Apply `op` on the current head under the local writers' lock and compare-and-swap the ref to the new
    commit, or have the lock's holder do so. Raises the fold's error when it refuses; a refused op changes
    nothing and is not recorded."""
    signed = store.signatures(op.actor, AGENT_EMAIL)  # depends on no head: made before the lock
    appended = _append(store, op, fold, signed)
    if int(op.id[:8], 16) % MAINTENANCE_EVERY == 0:
        maintain(store)
    return appended


def _append(store: Store, op: Op, fold: Fold, signed: Signatures) -> Appended:
    queue = store.append_queue()
    alone = store.observed()
    with _holding(store, queue, wait=alone) as held:
        if held:
            return _lead(store, queue, op, fold, signed, alone)
    return _wait(store, queue, op, fold, signed)


@contextmanager
def _holding(store: Store, queue: AppendQueue, *, wait: bool = False) -> Iterator[bool]:
    """The writers' lock for the body if it is free (True), or, with `wait`, once it is; after letting it go,
    the oldest op still queued is woken: its writer takes the lock."""
    held = False
    try:
        with store.locked() if wait else store.locked_if_free() as free:
            held = wait or bool(free)
            yield held
    finally:
        if held:
            queue.wake()


def _wait(store: Store, queue: AppendQueue, op: Op, fold: Fold, signed: Signatures) -> Appended:
    """The lock is taken: queue the op and sleep until woken, with the outcome there, or the lock free to
    take (then this writer holds it and applies its op, and what is queued, itself)."""
    name = queue.new_name(op.id)
    try:
        listener = queue.listen(name)
    except OSError:  # no Unix sockets here (a sandbox, say): wait for the lock itself, as before the queue
        with _holding(store, queue, wait=True):
            return _lead(store, queue, op, fold, signed, alone=False)
    settled = False  # the op's fate is known (an outcome read, or this writer applying it): nothing to take back
    try:
        try:
            queue.put(name, {"op": op.to_dict(), "signed": store.exported_signatures(signed), "fold": _identity(fold)})
        except OSError:  # the queue's folder cannot take it (a file in its place, say): wait for the lock itself
            settled = True
            with _holding(store, queue, wait=True):
                return _lead(store, queue, op, fold, signed, alone=False)
        queue.announce()
        while True:
            found = queue.outcome(name)
            if found is not None:
                settled = True
                return _appended(op, found)
            with _holding(store, queue) as held:
                if held:
                    recover(store, queue)  # a holder that died serving this entry may have applied it
                    found = queue.outcome(name)
                    settled = True
                    if found is not None:
                        return _appended(op, found)
                    queue.take_back(name)
                    return _lead(store, queue, op, fold, signed, alone=False)
            listener.wait(RECHECK_SECONDS)
    except BaseException:
        # Interrupted while waiting: take the op back, unless a holder took it first. Then it is being
        # applied, or was: wait the moment its round takes and say how it ended, rather than report an op
        # the ledger holds as not done. (A second interrupt while waiting gives up on knowing.) A refusal
        # read from the outcome, or raised applying the op itself, is the op's answer: raised as it is.
        if settled or queue.withdraw(name):
            raise
        found = _settle(store, queue, name, listener)
        if found is None:
            raise
        return _appended(op, found)
    finally:
        listener.close()


def _settle(store: Store, queue: AppendQueue, name: str, listener: Listener) -> dict[str, Any] | None:
    """The outcome of entry `name`, which a holder took: None if that holder died before the ledger took it
    (the entry is then dropped, never applied)."""
    while True:
        found = queue.outcome(name)
        if found is not None:
            return found
        with _holding(store, queue) as held:
            if held:
                recover(store, queue)
                found = queue.outcome(name)
                if found is None:
                    queue.drop(name)
                return found
        listener.wait(RECHECK_SECONDS)


def _lead(store: Store, queue: AppendQueue, op: Op, fold: Fold, signed: Signatures, alone: bool) -> Appended:
    """A holder's turn: its own op, then, unless `alone`, the queued ops in rounds while they keep coming."""
    # One look at the folder begins the turn: a dead holder's round to settle, writers already waiting. (A
    # writer that queues during this op is served next if others wait, else woken to take the lock itself.)
    listed = queue.listing()
    if JOURNAL in listed:
        recover(store, queue)
        listed = queue.listing()
    # Writers waiting for the lock make this a burst whatever this process's own pace (see `_round`)
    contended = any(name.endswith(".op") for name in listed)
    own: Appended | LanesError = _round(store, queue, fold, [("", op, signed)], contended)[""]
    if not alone and listed:
        try:
            _serve(store, queue, fold, listed)
        except Exception:  # noqa: BLE001 - the holder's op is in: serving others must not report it failed
            # What failed is left as it was: ops not applied stay queued (their writers apply them once the
            # lock is free), a round the ledger took is settled from its journal by the next holder.
            pass
    if isinstance(own, LanesError):
        raise own
    return own


def _serve(store: Store, queue: AppendQueue, fold: Fold, listed: list[str]) -> None:
    waiting = _queued(store, queue, fold, BATCH - 1, listed)
    if not waiting:
        return  # nobody waits: a lone writer's turn ends with its op
    ear: Listener | None = queue.hear_arrivals()  # after the listing: an op put since is announced to it
    end = _time.monotonic() + TURN_SECONDS
    done = 1
    try:
        while True:
            _round(store, queue, fold, waiting, contended=True)
            done += len(waiting)
            if done >= BATCH or _time.monotonic() >= end:
                return
            if ear is not None:
                ear.drain()  # what was announced so far is listed next
            waiting = _queued(store, queue, fold, BATCH - done)
            if not waiting and ear is not None:
                ear.wait(PAUSE_SECONDS)  # the writers just served are writing their next ops
                waiting = _queued(store, queue, fold, BATCH - done)
            if not waiting:
                return
    finally:
        if ear is not None:
            ear.close()


def _queued(store: Store, queue: AppendQueue, fold: Fold, limit: int, listed: list[str] | None = None) -> Queued:
    waiting: Queued = []
    for name, entry in queue.waiting(limit, listed):
        if entry.get("fold") != _identity(fold):
            continue  # another fold, or another git-lanes: its own writer applies it when it holds the lock
        if not queue.take(name):
            continue  # its writer took it back (interrupted)
        try:
            waiting.append((name, Op.from_dict(entry.get("op")), store.imported_signatures(entry.get("signed"))))
        except (LanesError, ValueError) as exc:
            queue.finish(name, {"refused": _refusal(InternalError(f"the queued op cannot be read: {exc}"))})
    return waiting


def _round(store: Store, queue: AppendQueue, fold: Fold, ops: Queued, contended: bool = False) -> dict[str, Any]:
    """Apply `ops` in order on the ledger's head and move it once; each queued op's outcome left for its
    waiter. Returns the outcome of the op named "" (the holder's own: its Appended, or its refusal).

    `contended`: other writers wait for the lock. Their ops come as close together as a looping process's,
    so they are a burst too (`log.in_burst`): each delta writes its commit alone, not a whole tree; a holder
    whose own previous append was long ago (it waited while others held the lock) wrote a whole tree for
    every turn it began, a tenth of eight writers' holding time."""
    for attempt in range(CAS_ATTEMPTS):
        base = tip = head(store)
        mine: dict[str, Any] = {}
        outcomes: dict[str, dict[str, Any]] = {}
        applied: list[Op] = []
        for name, each, each_signed in ops:
            try:
                burst = in_burst() or contended
                commit, recorded = _build(store, tip, each, fold, each_signed, burst=burst)
            except LanesError as exc:
                if name:
                    outcomes[name] = {"refused": _refusal(exc)}
                else:
                    mine[name] = exc
                continue
            except Exception as exc:
                if not name:
                    raise
                outcomes[name] = {"refused": _refusal(InternalError(f"applying the op failed: {exc!r}"))}
                continue
            tip = commit
            applied.append(recorded)
            if name:  # its waiter has the op: what the fold decided is all it lacks
                outcomes[name] = {"commit": commit, "result": recorded.result}
            else:
                mine[name] = Appended(recorded, commit)
        if tip != base:
            assert tip is not None
            if outcomes:  # the holder's own op alone leaves nobody an outcome: nothing to journal
                queue.begin({"old": base, "new": tip, "outcomes": outcomes})
            try:
                store.update_refs([RefUpdate(LEDGER, tip, base, _reflog_message(applied))])
            except Conflict:
                # Only a writer outside the lock (a plain `git update-ref`, say) can move the ref here.
                if outcomes:
                    queue.end()
                if attempt == CAS_ATTEMPTS - 1:
                    raise
                _time.sleep(0.01 * (attempt + 1))
                continue
        queue.finish_all(outcomes)
        if outcomes:
            queue.end()
        return mine
    raise AssertionError("unreachable: the last attempt returns or raises")


def recover(store: Store, queue: AppendQueue) -> None:
    """Settle the round of a holder that died after journaling it and before leaving every outcome: if the
    ledger took its ops, their waiters get their outcomes; if not, their entries stay queued for this turn."""
    intent = queue.pending_intent()
    if intent is None:
        return
    outcomes = intent.get("outcomes")
    if isinstance(outcomes, dict) and _took(store, intent):
        queue.finish_all({name: outcome for name, outcome in outcomes.items()
                          if isinstance(name, str) and "/" not in name and isinstance(outcome, dict)})
    queue.end()


def _took(store: Store, intent: dict[str, Any]) -> bool:
    """Whether the ledger holds the round of `intent`: its last commit, or that commit's op (found by its id)
    since the head the round began on, which a sync may have replayed onto a peer's ops."""
    new, old = intent.get("new"), intent.get("old")
    current = head(store)
    if current == new:
        return True
    if current == old or not isinstance(new, str):
        return False
    try:
        wanted, _ = op_identity(store.commit_info(new).message, new)
    except (KeyError, ValueError, LanesError):  # ValueError: not an object id, or not a commit's
        return False  # the round's commit is gone: nothing the ledger holds came from it
    commit = current
    for _ in range(RECOVER_DEPTH):
        if commit is None or commit == old:
            return False
        info = store.commit_info(commit)
        try:
            if op_identity(info.message, commit)[0] == wanted:
                return True
        except LanesError:
            pass
        commit = info.parents[0] if info.parents else None
    return False


def _appended(op: Op, outcome: dict[str, Any]) -> Appended:
    """What the holder that applied `op` left its writer: the op as recorded, or the fold's refusal."""
    refused = outcome.get("refused")
    if isinstance(refused, dict):
        raise _error(refused)
    commit, result = outcome.get("commit"), outcome.get("result")
    if not isinstance(commit, str) or not isinstance(result, dict):
        raise InternalError("the ledger's append queue left an outcome that cannot be read: "
                            f"commit {commit!r}, result {type(result).__name__}")
    return Appended(op.with_result(result), commit)


def _refusal(exc: LanesError) -> dict[str, Any]:
    return {"class": type(exc).__name__, "message": exc.message, "hint": exc.hint, "code": exc.code,
            "details": exc.details, "exit_code": exc.exit_code}


def _error(refusal: dict[str, Any]) -> LanesError:
    """The error a holder refused a waiter's op with, as the waiter would have raised it itself."""
    kind = getattr(errors, str(refusal.get("class")), None)
    if not (isinstance(kind, type) and issubclass(kind, LanesError)):
        kind = LanesError
    details = refusal.get("details")
    error = kind(str(refusal.get("message")), hint=refusal.get("hint") or None, code=refusal.get("code") or None,
                 details=details if isinstance(details, dict) else None)
    if kind is LanesError and isinstance(refusal.get("exit_code"), int):
        error.exit_code = refusal["exit_code"]
    return error


def _identity(fold: Fold) -> str:
    """The fold's class, the file it is defined in and OUTCOME_FORMAT: a writer of another install (another
    version, say) decides its ops by its own rules and reads its own outcomes, so its ops are its own to apply.
    The file alone does not tell releases apart: an install upgraded in place keeps its paths, while a
    long-lived face (an MCP server) still runs the release it started with."""
    kind = type(fold)
    found = _IDENTITIES.get(kind)
    if found is None:  # asked for every op put and every entry served: worked out once a fold class
        file = getattr(sys.modules.get(kind.__module__), "__file__", "")
        found = _IDENTITIES[kind] = f"{kind.__module__}.{kind.__qualname__}@{file}#{OUTCOME_FORMAT}"
    return found


_IDENTITIES: dict[type, str] = {}


def _reflog_message(applied: list[Op]) -> str:
    """A round's reflog line: its first op's type and id, as for a lone op, and how many more it applied."""
    first, more = applied[0], len(applied) - 1
    return f"lanes ledger: {first.type} {first.id}" + (f" and {more} more" if more else "")
