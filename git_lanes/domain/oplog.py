"""The operation log (`refs/lanes/oplog`, git_lanes/model/oplog.py): every lanes operation that moves refs is
recorded as it ends, the jj way: which refs it moved old -> new, which transition notes it changed, which
ledger ops it appended, under a one-line description.

Nothing has to remember to report: an operation observes the store's single compare-and-swap primitive
(`Store.update_refs`) for as long as it runs, in this thread only. Operations nest: the outermost one records
(a `commit --auto-accept` that proposes, runs gates and accepts across two lock sections is one entry).

A process killed between moving refs and appending its entry must not leave moves nobody can undo: just
before each of its ref transactions, an operation writes the moves to its own journal (`lanes-oplog/<id>` in
the git directory, git_lanes/store/journal.py), and `recover` (the next writer, `op log`, `undo`) appends the
entry of a dead process's journal from the moves that took effect.

A log whose head commit is gone from the object database (or that names a blob or tree) cannot be built on,
and what it held cannot be recovered: like git's reflog, whose damage never stops a ref update, the next entry
starts the log afresh (no parent; the ref moves by compare-and-swap from the unreadable value) and a notice
says once that undo cannot reach before it. Its readers stop where a chain breaks below the head
(domain/oplog_chain.py)."""

from __future__ import annotations

import os
from contextvars import ContextVar

from git_lanes.domain import lanes
from git_lanes.domain.context import Context
from git_lanes.domain.oplog_chain import BROKEN_HINT, CORRUPT, commits, unreadable
from git_lanes.errors import LanesError, WriteFailed, command, notice
from git_lanes.model import refs
from git_lanes.model.oplog import LedgerSpan, LedgerStep, NoteChange, OpEntry, RefMove, WorkspaceChange
from git_lanes.store import RefUpdate, journal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import AbstractContextManager
    from contextvars import Token
    from types import TracebackType

TRACKED = (refs.LANE_HEADS, refs.PROPOSALS, refs.REJECTED, refs.DELETED, refs.BACKUPS)
_ACTIVE: ContextVar[Recorder | None] = ContextVar("lanes_operation", default=None)


def tracked(ref: str, trunk: str) -> bool:
    """Refs an undo moves back. The ledger and notes are shared logs, undone by inverse records instead;
    run logs, the meta refs and remote-tracking copies are not lanes operations' to undo."""
    return ref == refs.lane_ref(trunk, trunk) or ref.startswith(TRACKED)


def lane_of(ref: str, trunk: str) -> str | None:
    if ref == refs.lane_ref(trunk, trunk):
        return trunk
    return ref[len(refs.LANE_HEADS):] if ref.startswith(refs.LANE_HEADS) else None


class Recorder:
    """What one operation moved, as it happens."""

    def __init__(self, ctx: Context, description: str | None, actor: str | None, *, id: str | None = None,
                 time: float | None = None) -> None:
        self.ctx = ctx
        self.description = description
        self.actor = actor
        self.id = id or os.urandom(8).hex()
        self.time = time
        self.journal: journal.Journal | None = None
        self.first_message: str | None = None
        self.old: dict[str, str | None] = {}
        self.new: dict[str, str | None] = {}
        self.notes_old: dict[str, str | None] = {}
        self.notes_new: dict[str, str | None] = {}
        self.ledger: list[LedgerStep] = []
        self.spans: list[LedgerSpan] = []
        self.spans_only = False  # record the ledger's moves as spans (`ledger_as_spans`)
        self.files: set[str] = set()
        self.workspaces: list[WorkspaceChange] = []
        self.undoes: str | None = None
        self.backup: str | None = None

    def relevant(self, update: RefUpdate) -> bool:
        return update.name in (refs.NOTES, refs.LEDGER) or tracked(update.name, self.ctx.trunk)

    def before(self, updates: list[RefUpdate]) -> None:
        """Journal the moves about to be made (the entry's recovery if this process dies before appending)."""
        moving = [[u.name, u.new, u.old, u.message] for u in updates if self.relevant(u)]
        if not moving:
            return
        if self.journal is None:
            self.journal = journal.Journal(journal_folder(self.ctx), self.id)
            self.journal.write({"id": self.id, "time": self.ctx.now(), "actor": self.actor,
                                "description": self.description})
        self.journal.write({"before": moving, **self._meta()})

    def _meta(self) -> dict:
        return {"files": sorted(self.files), "undoes": self.undoes, "backup": self.backup,
                "description": self.description, "spans_only": self.spans_only,
                "workspaces": [[w.lane, w.before, w.after] for w in self.workspaces]}

    def journal_meta(self) -> None:
        if self.journal is not None:
            self.journal.write({"meta": True, **self._meta()})

    def observe(self, updates: list[RefUpdate]) -> None:
        self._observe(updates)
        if self.journal is not None and any(self.relevant(u) for u in updates):
            try:
                self.journal.write({"applied": True, **self._meta()})
            except WriteFailed:
                pass  # the moves are made: without this line, `recover` reads what took effect from the refs

    def _observe(self, updates: list[RefUpdate]) -> None:
        for update in updates:
            if update.name == refs.NOTES:
                self._notes(update)
            elif update.name == refs.LEDGER:
                self._ledger(update)
            elif tracked(update.name, self.ctx.trunk):
                self.old.setdefault(update.name, update.old)
                self.new[update.name] = update.new
            else:
                continue
            self.first_message = self.first_message or update.message

    def _notes(self, update: RefUpdate) -> None:
        store = self.ctx.store
        before = store.tree_of(update.old) if update.old else None
        after = store.tree_of(update.new) if update.new else None
        for change in store.diff_trees(before, after):
            target = change.path.replace("/", "")
            if len(target) != 40:
                continue
            self.notes_old.setdefault(target, change.old.oid if change.old else None)
            self.notes_new[target] = change.new.oid if change.new else None

    def _ledger(self, update: RefUpdate) -> None:
        if self.spans_only:  # a sync: its moves, not its thousands of ops (oplog_steps reads those when asked)
            if self.spans and self.spans[-1].new == update.old and update.new is not None:
                self.spans[-1] = LedgerSpan(self.spans[-1].old, update.new)
            elif update.new is not None:
                self.spans.append(LedgerSpan(update.old, update.new))
            return
        from git_lanes.domain import oplog_steps

        self.ledger += oplog_steps.between(self.ctx, update.old, update.new)

    def entry(self) -> OpEntry | None:
        moves = tuple(self._move(ref) for ref in self.new if self.old[ref] != self.new[ref])
        notes = tuple(NoteChange(target, self.notes_old[target], new) for target, new in self.notes_new.items()
                      if self.notes_old[target] != new)
        recorded = OpEntry(self.id, self.time if self.time is not None else self.ctx.now(),
                           self.actor or self.ctx.store.signature().name,
                           self.description or _describe(self.first_message), moves, notes, tuple(self.ledger),
                           tuple(self.workspaces), self.undoes, self.backup, ledger_spans=tuple(self.spans))
        return None if recorded.empty else recorded

    def _move(self, ref: str) -> RefMove:
        old, new = self.old[ref], self.new[ref]
        lane = lane_of(ref, self.ctx.trunk)
        introduced = lane is not None and new is not None and not any(
            self.ctx.store.is_ancestor(new, head) for other, head in _lane_heads(self.ctx).items() if other != ref)
        return RefMove(ref, old, new, introduced, lane in self.files)


def active_undo(target: str, later: list[OpEntry]) -> OpEntry | None:
    """The entry among `later` (newest first) that undid operation `target` and was not itself undone."""
    for index, entry in enumerate(later):
        if entry.undoes == target and active_undo(entry.id, later[:index]) is None:
            return entry
    return None


def _lane_heads(ctx: Context) -> dict[str, str]:
    """Every lane's head commit. A head that is no commit (a broken lane sync refuses and reports) has no
    history to compare with, so it is left out rather than failing the operation being recorded."""
    found = {}
    for name in lanes.lane_names(ctx):
        head = ctx.store.read_ref(refs.lane_ref(name, ctx.trunk))
        if head is not None and ctx.store.object_kind(head) == "commit":
            found[refs.lane_ref(name, ctx.trunk)] = head
    return found


def _describe(message: str | None) -> str:
    text = (message or "lanes operation").strip().splitlines()[0]
    return text[len("lanes: "):] if text.startswith("lanes: ") else text


def operation(ctx: Context, description: str | None = None, actor: str | None = None, *,
              locked: bool = False) -> Operation:
    """Record everything the body moves as one entry (or join the operation already running). `locked`:
    the caller holds the writers' lock, so the entry is appended without taking it again."""
    return Operation(ctx, description, actor, locked)


class Operation:
    """`operation`'s body, as a class rather than a contextlib generator: contextlib loads collections and
    functools, ~3 ms of a light sync's start-up that nothing else on its path needs."""

    def __init__(self, ctx: Context, description: str | None, actor: str | None, locked: bool) -> None:
        self.ctx, self.description, self.actor, self.locked = ctx, description, actor, locked
        self.recorder: Recorder | None = None  # None: joined the operation already running
        self.token: Token[Recorder | None] | None = None
        self.observing: AbstractContextManager[None] | None = None

    def __enter__(self) -> Recorder:
        active = _ACTIVE.get()
        if active is not None:
            return active
        recorder = Recorder(self.ctx, self.description, self.actor)
        token = _ACTIVE.set(recorder)
        try:
            observing = self.ctx.store.observing(recorder.observe, recorder.before)
            observing.__enter__()
        except BaseException:
            _ACTIVE.reset(token)
            raise
        self.recorder, self.token, self.observing = recorder, token, observing
        return recorder

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        recorder, token, observing = self.recorder, self.token, self.observing
        if recorder is None or token is None or observing is None:
            return
        self.recorder = self.token = self.observing = None
        failed = kind is not None
        try:
            try:
                observing.__exit__(kind, error, trace)
            except BaseException:
                failed = True
                raise
        finally:
            _ACTIVE.reset(token)
            try:
                entry = recorder.entry()
                if entry is not None:
                    if self.locked:
                        append(self.ctx, entry)
                    else:
                        with self.ctx.store.locked():
                            append(self.ctx, entry)
                if recorder.journal is not None:
                    recorder.journal.close()  # after the entry: a kill in between leaves one recover finds logged
            except WriteFailed:
                # The operation is done (a lane made, say) but its entry cannot be written (a full disk): it
                # is not undone for that, nor reported failed. Its journal is left as a killed process's is,
                # and the next writer appends the entry from it (`recover`) once there is room.
                if recorder.journal is not None:
                    recorder.journal.release()
            except Exception:
                if not failed:  # the operation's own error matters more than its record
                    raise


def ledger_as_spans() -> None:
    """Tell the running operation (a sync) to record the ledger's moves rather than each op they bring: the
    ops are read from the ledger when an undo or `op log` asks (oplog_steps.of_entry)."""
    active = _ACTIVE.get()
    if active is not None and not active.spans_only:
        active.spans_only = True
        active.journal_meta()


def files_moved(lane: str) -> None:
    """Tell the running operation it moved the files of `lane`'s workspace along with the lane."""
    active = _ACTIVE.get()
    if active is not None:
        active.files.add(lane)
        active.journal_meta()


def workspace_changed(lane: str, before: str, after: str) -> None:
    """Tell the running operation it changed `lane`'s workspace files from tree `before` to `after`."""
    active = _ACTIVE.get()
    if active is not None and before != after:
        active.workspaces.append(WorkspaceChange(lane, before, after))
        active.journal_meta()


def append(ctx: Context, entry: OpEntry) -> str:
    """Add `entry` on top of the log (call with the writers' lock held), after the entries of killed
    processes' operations; returns its commit."""
    recover(ctx)
    return _append(ctx, entry)


def _append(ctx: Context, entry: OpEntry) -> str:
    store = ctx.store
    head = store.read_ref(refs.OPLOG)
    kind = store.object_kind(head) if head else "commit"  # one header read: the entry's parent must exist
    message = f"lanes oplog: {entry.description}"
    if kind != "commit":
        if kind is None and head and store.object_present(head):
            kind = CORRUPT  # its file is here, but not even its header reads: damaged, not lost
        # The operation is done: losing its entry, or failing it now, would leave it half reported; the entries
        # below the lost head are gone either way (`git reflog` keeps the value the ref had).
        message = f"lanes oplog: restarted ({head} unreadable): {entry.description}"
        notice(f"{refs.OPLOG} named {unreadable(head, kind)}: the operation log starts afresh with this "
               "operation, and undo cannot reach the operations before it")
    commit = store.write_commit(store.empty_tree(), [head] if head and kind == "commit" else [], entry.message())
    store.update_refs([RefUpdate(refs.OPLOG, commit, head, message[:200])])
    return commit


def entries(ctx: Context, limit: int | None = None, *, told: bool = True) -> Iterator[OpEntry]:
    """The log, newest first, down to where its chain breaks (an entry whose parent is gone): the entries
    past it cannot be read, which a notice says (unless not `told`). A head that cannot be read is an error:
    there is nothing to show."""
    head = ctx.store.read_ref(refs.OPLOG)

    def broke(child: str | None, commit: str, kind: str | None, count: int) -> None:
        if child is None:
            raise LanesError(f"the operation log cannot be read: {refs.OPLOG} names {unreadable(commit, kind)}",
                             code="oplog_broken", hint=BROKEN_HINT)
        if told:
            notice(f"the operation log stops at entry {child[:8]} ({count} from the newest): its parent is "
                   f"{unreadable(commit, kind)}, so undo cannot reach the operations before it "
                   f"({command('doctor', check='oplog', fix=True)} ends the log there)")

    return (OpEntry.from_message(info.message, commit) for commit, info in commits(ctx, head, limit, broke))


def journal_folder(ctx: Context) -> str:
    return os.path.join(str(ctx.store.common_dir), "lanes-oplog")


def recover(ctx: Context) -> list[str]:
    """Append the entries of operations whose process died before appending them, from their journals: the
    moves each one confirmed, and of the transaction it announced last, the refs that hold its new value
    (it may or may not have applied). Call with the writers' lock held; returns the entries' ids."""
    recovered = []
    for path, records, fd in journal.orphans(journal_folder(ctx)):
        try:
            entry = _replay(ctx, records)
            if entry is not None and not _logged(ctx, entry):
                _append(ctx, entry)
                recovered.append(entry.id)
        finally:
            journal.finish(path, fd)
    return recovered


def recover_unlocked(ctx: Context) -> None:
    """`recover`, taking the writers' lock, for readers of the log (`op log`, `undo`), only when a dead
    process left a journal: nothing to do (the usual case) costs one listing and waits for no writer."""
    if journal.has_orphans(journal_folder(ctx)):
        with ctx.store.locked():
            recover(ctx)


def _replay(ctx: Context, records: list[dict]) -> OpEntry | None:
    header = next((r for r in records if "id" in r), None)
    if header is None:
        return None
    recorder = Recorder(ctx, header.get("description"), header.get("actor"), id=str(header["id"]),
                        time=float(header.get("time") or ctx.now()))
    announced: list[RefUpdate] | None = None
    for record in records:
        if "before" in record:
            announced = [RefUpdate(name, new, old, message) for name, new, old, message in record["before"]]
        elif record.get("applied") and announced is not None:
            recorder._observe(announced)
            announced = None
        if "files" in record:
            recorder.description = record.get("description") or recorder.description
            recorder.files = set(record["files"])
            recorder.undoes, recorder.backup = record.get("undoes"), record.get("backup")
            recorder.workspaces = [WorkspaceChange(*w) for w in record.get("workspaces") or ()]
            recorder.spans_only = bool(record.get("spans_only"))
    if announced:  # killed around its last transaction: what took effect is what the refs now say
        recorder._observe([u for u in announced if ctx.store.read_ref(u.name) == u.new])
    return recorder.entry()


def _logged(ctx: Context, entry: OpEntry) -> bool:
    """Whether the log holds `entry` already (its process died after appending it, before removing the
    journal, and the next writer came right after: it is among the newest)."""
    try:
        return any(logged.id == entry.id for logged in entries(ctx, 100, told=False))
    except LanesError as exc:
        if exc.code != "oplog_broken":
            raise
        return False  # its head is lost: nothing there holds the entry, which starts the log afresh
