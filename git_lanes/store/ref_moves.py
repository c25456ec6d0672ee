"""Reading and moving refs, mixed into Store: every ref move goes through `update_refs`, all or nothing,
each ref compared with its expected old value; the operation log hears of each (`observing`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import pygit2

from git_lanes.errors import Conflict
from git_lanes.model import refs
from git_lanes.store import clock, stale
from git_lanes.store.values import RefUpdate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_lanes.store.identity import Identity

# How long the identity a commit was signed with stays the one its ref move's reflog line names: a ledger
# append needs it twice, a moment apart, and each read stats every configuration file (store/identity.py).
IDENTITY_REUSE_SECONDS = 1.0
_HEX = frozenset("0123456789abcdef")

# Who wants to hear of every ref move this thread (or task) makes, per repository: the operation log records
# each lanes operation's moves through here, so no call site has to remember to report its own.
# `before` (optional) hears of them just before they are applied: the log's journal, for a process killed in
# between.
Observer = Callable[[list["RefUpdate"]], None]
_OBSERVERS: ContextVar[tuple[tuple[Path, Observer, Observer | None], ...]] = ContextVar("lanes_ref_observers",
                                                                                         default=())


class RefMoves:
    """Mixed into Store: its refs, read and moved."""

    repo: pygit2.Repository
    common_dir: Path
    _logs_always: bool | None
    _identity_read: tuple[pygit2.Signature | None, float]
    _identity: Identity | None
    _ledger_file: str  # the ledger's loose ref file

    def read_ref(self, name: str) -> str | None:
        if name == refs.LEDGER:  # read by every append and every read of the ledger
            oid = _plain(self._ledger_file)
            if oid is not None:
                return oid
        try:
            ref = self.repo.references.get(name)
        except ValueError:  # a name libgit2 refuses (over its ~1 KB buffer, or malformed): no such ref exists
            return None
        if ref is None:
            return None
        if ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
            ref = ref.resolve()
        return str(ref.target)

    def list_refs(self, prefix: str) -> dict[str, str]:
        found = {}
        for name in self.repo.references:
            if name.startswith(prefix):
                oid = self.read_ref(name)
                if oid:
                    found[name] = oid
        return found

    @contextmanager
    def observing(self, observer: Observer, before: Observer | None = None) -> Iterator[None]:
        """Call `observer` with the updates of every `update_refs` this thread makes here, once applied (and
        `before` with them just before they are)."""
        token = _OBSERVERS.set((*_OBSERVERS.get(), (self.common_dir, observer, before)))
        try:
            yield
        finally:
            _OBSERVERS.reset(token)

    def observed(self) -> bool:
        """Whether an observer (an operation being recorded) sees what this thread moves here."""
        return any(where == self.common_dir for where, _, _ in _OBSERVERS.get())

    def update_refs(self, updates: list[RefUpdate]) -> None:
        """Apply every update, or none if any ref is not at its expected old value."""
        if not updates:
            return
        for where, _, before in _OBSERVERS.get():
            if where == self.common_dir and before is not None:
                before(updates)
        try:
            self._update_refs(updates)
        finally:
            self._released_packs()
        for where, observer, _ in _OBSERVERS.get():
            if where == self.common_dir:
                observer(updates)

    def _released_packs(self) -> None:
        """The store's hook for the packs it wrote for this move (Store: `ObjectCache.release_packs`)."""

    def _update_refs(self, updates: list[RefUpdate]) -> None:
        # Named only if the move fails: a path built per move was a sixtieth of a ledger append.
        owned_locks = (self.common_dir / f"{u.name}.lock" for u in updates if stale.owned_ref(u.name))
        try:
            stale.retrying(lambda: self._apply_ref_updates(updates), owned_locks, pygit2.GitError,
                           "could not update refs")
        except pygit2.GitError as exc:
            locks = [self.common_dir / f"{u.name}.lock" for u in updates]
            held = next((lock for lock in [*locks, self.common_dir / "packed-refs.lock"] if lock.exists()), None)
            hint = f"retry; if no git process is running, delete {held}" if held \
                else "another process holds a ref lock; retry"
            if "beneath that folder" in str(exc) or ("cannot lock ref" in str(exc) and "exists" in str(exc)):
                hint = "a ref name cannot also be a folder of refs (lane a beside lane a/b): choose another name"
            raise Conflict(f"could not update refs: {exc}", code="ref_locked", hint=hint) from None

    def _apply_ref_updates(self, updates: list[RefUpdate]) -> None:
        if len(updates) == 1 and self._move_loose(updates[0]):
            return
        from git_lanes.store import reflogs  # read-only commands never need it, nor a ledger append
        for update in updates:
            if update.old is None and update.new is not None and stale.owned_ref(update.name):
                reflogs.clear_orphans(self.common_dir, update.name, self.read_ref)
        self._transact_patiently(updates)
        # libgit2 leaves a deleted ref's reflog behind where git removes it; left there, reflogs beneath
        # `logs/refs/lanes/heads/a/` stop lane `a` from ever being created ("there are reflogs beneath").
        for update in updates:
            if update.new is None and (stale.owned_ref(update.name) or update.name.startswith(refs.REMOTE_PREFIX)):
                reflogs.remove(self.common_dir, update.name)

    def _move_loose(self, update: RefUpdate) -> bool:
        """Move one of our refs without libgit2 (loose_ref.py: the files libgit2 writes, at a fraction of its
        cost); False, with nothing done, where libgit2 must: a creation or deletion, a ref that is not plain,
        reflogs kept otherwise than always."""
        from git_lanes.store import loose_ref

        if update.new is None or update.old is None or not stale.owned_ref(update.name):
            return False
        if self._logs_always is None:
            try:
                logs = str(self.repo.config["core.logAllRefUpdates"])
            except KeyError:
                logs = ""
            self._logs_always = logs.lower() == "always"
        if not self._logs_always:
            return False
        try:
            loose_ref.move(str(self.common_dir), update.name, update.new, update.old, update.message,
                           self._reflog_identity, log=True, patience=self._ref_lock_timeout,
                           recycle=update.name == refs.LEDGER)
        except loose_ref.Unusual:
            return False
        except (loose_ref.LockTaken, OSError) as exc:  # reported as libgit2's own failure is
            raise pygit2.GitError(str(exc)) from None
        return True

    def configured_identity(self) -> pygit2.Signature | None:
        """git's configured identity (user.name, user.email) as libgit2 reads it now, None when there is none
        (its time means nothing: clock.py tells the time). Remembered, with that moment, for the reflog line
        of the ref move that follows (`_reflog_identity`)."""
        identity = self._identity
        if identity is None:
            from git_lanes.store.identity import Identity  # a command that moves no ref never needs it

            identity = self._identity = Identity(self.repo)
        who = identity.read()
        self._identity_read = (who, time.monotonic())
        return who

    def _ref_lock_timeout(self, packed: bool = False) -> int:
        """How long git would keep trying a taken ref lock (or packed-refs' lock), in milliseconds:
        core.filesRefLockTimeout (core.packedRefsTimeout), git's default where unset. Read only once a lock
        is found taken, so an uncontended move reads no config."""
        from git_lanes.store import loose_ref

        key, default = ("core.packedRefsTimeout", loose_ref.PACKED_REFS_TIMEOUT_MS) if packed \
            else ("core.filesRefLockTimeout", loose_ref.REF_LOCK_TIMEOUT_MS)
        try:
            return int(self.repo.config.get_int(key))
        except (KeyError, ValueError, pygit2.GitError):  # unset, or a value git itself would refuse
            return default

    def _transact_patiently(self, updates: list[RefUpdate]) -> None:
        """libgit2's transaction, retried while one of its locks (or packed-refs') is taken, as long as git
        would wait for it: libgit2 gives up at once."""
        from git_lanes.store import loose_ref

        locks = [self.common_dir / f"{u.name}.lock" for u in updates]
        backoff: loose_ref.Backoff | None = None
        while True:
            try:
                return self._transact(updates)
            except pygit2.GitError:
                packed = (self.common_dir / "packed-refs.lock").exists()
                if not packed and not any(lock.exists() for lock in locks):
                    raise
                if backoff is None:
                    backoff = loose_ref.Backoff(self._ref_lock_timeout(packed))
                if not backoff.again():
                    raise

    def _reflog_identity(self) -> tuple[bytes, bytes, int, int]:
        """Who libgit2 names in a reflog line: the configured identity, else "unknown" (as
        `git_reference__log_signature` does), at this moment. The identity is the one read for the commit
        being landed (`configured_identity`, under a second ago), else read now; the time and offset are now's
        as the commit's own are taken (clock.py)."""
        who, read_at = self._identity_read
        if time.monotonic() - read_at > IDENTITY_REUSE_SECONDS:
            who = self.configured_identity()
        when, offset = clock.now()  # the commit's clock, without libgit2's stat of the zone file (clock.py)
        if who is None:
            return b"unknown", b"unknown", when, offset
        return who.raw_name, who.raw_email, when, offset

    def _transact(self, updates: list[RefUpdate]) -> None:
        with self.repo.transaction() as tx:
            for update in updates:
                tx.lock_ref(update.name)
            for update in updates:
                current = self.read_ref(update.name)
                if current != update.old:
                    raise Conflict(f"{update.name} moved: expected {_short(update.old)}, found "
                                   f"{_short(current)}", code="stale_ref",
                                   hint="another writer got there first; re-read and retry")
            for update in updates:
                if update.new is None:
                    tx.remove(update.name)
                else:
                    # pygit2 cannot pass a signature here; libgit2 uses the configured identity
                    tx.set_target(update.name, pygit2.Oid(hex=update.new), None, update.message)


def _plain(path: str) -> str | None:
    """The object id the loose ref file at `path` holds, where it holds one as git writes it (40 lowercase hex
    digits and a newline); None for anything else (no loose file, a packed ref, a symbolic ref, a damaged or
    unreadable file), for libgit2 to read as it reads it. Three system calls where libgit2 makes four,
    without its reference objects."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        text = os.read(fd, 64)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(text) != 41 or text[40:] != b"\n":
        return None
    oid = text[:40].decode("ascii", "replace")
    return oid if _HEX.issuperset(oid) else None


def _short(oid: str | None) -> str:
    return oid[:8] if oid else "nothing"
