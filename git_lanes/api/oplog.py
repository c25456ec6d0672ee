"""The operation log and undo through the API. `op_log` shows the recorded lanes operations together with the
ledger's undoable ops that no recorded operation covers (a claim, a post, a task change made on its own);
`undo` reverses one of them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.errors import Conflict, NotFound, Refused, StaleState, UserError, command

if TYPE_CHECKING:  # the domain loads inside the methods that use it
    from git_lanes import ledger
    from git_lanes.domain import oplog
    from git_lanes.domain.context import Context
    from git_lanes.model.oplog import LedgerStep, OpEntry

# How far back `op log` and `undo OP` look, in each of the two logs (domain/undo_marks.py's LOOK too).
WINDOW = 500


@held
class OplogApi:
    """Mixed into `Lanes`, next to CoreApi (`ctx`, `_writing`)."""

    ctx: Context
    _writing: Callable[[], AbstractContextManager[Context]]

    @contextmanager
    def _operation(self, description: str, actor: str | None = None) -> Iterator[oplog.Recorder]:
        """Record everything the body moves as one entry of the operation log."""
        from git_lanes.domain import oplog

        with oplog.operation(self.ctx, description[:200], actor) as recorder:
            yield recorder

    def op_log(self, limit: int = 20) -> list[dict[str, Any]]:
        """Operations, newest first: recorded ones (kind "lanes") and undoable ledger ops (kind "ledger")."""
        from git_lanes import ledger
        from git_lanes.domain import ledger_undo, oplog, oplog_steps
        from git_lanes.domain.wording import checked_limit

        checked_limit(limit)
        oplog.recover_unlocked(self.ctx)  # a killed process's moves are in the log before anyone reads it
        entries = list(oplog.entries(self.ctx, min(limit, WINDOW)))
        steps = {e.id: oplog_steps.of_entry(self.ctx, e) for e in entries}
        covered = {step.id for e in entries for step in steps[e.id]}
        rows = [self._entry_row(e, entries[:index], steps[e.id]) for index, e in enumerate(entries)]
        for commit, op in ledger_undo.ledger_ops(self.ctx.store, ledger.head(self.ctx.store), min(limit * 5, WINDOW)):
            if op.type in ledger_undo.UNDOABLE and op.id not in covered:
                rows.append(self._ledger_row(commit, op, entries))
        rows.sort(key=lambda r: (r["time"], r["kind"] == "lanes"), reverse=True)
        return rows[:limit]

    def _entry_row(self, entry: OpEntry, later: list[OpEntry], steps: tuple[LedgerStep, ...]) -> dict[str, Any]:
        from git_lanes.domain import oplog

        undone_by = getattr(oplog.active_undo(entry.id, later), "id", None)
        return {"id": entry.id, "kind": "lanes", "time": entry.time, "actor": entry.actor,
                "description": entry.description, "undoes": entry.undoes, "undone_by": undone_by,
                "refs": len(entry.moves), "notes": len(entry.notes), "ledger": [s.id for s in steps],
                "backup": entry.backup}

    @staticmethod
    def _ledger_row(commit: str, op: ledger.Op, entries: list[OpEntry]) -> dict[str, Any]:
        from git_lanes.domain import ledger_undo, oplog
        from git_lanes.domain.coordination import FOLD

        summary = FOLD.summary(op, op.result or {})
        undone_by = getattr(oplog.active_undo(op.id, entries), "id", None)
        return {"id": op.id, "kind": "ledger", "time": op.time, "actor": op.actor, "description": summary,
                "type": op.type, "commit": commit, "undoes": (op.args or {}).get("undoes") if op.type ==
                ledger_undo.TYPE else None, "undone_by": undone_by}

    def op_show(self, op: str) -> dict[str, Any]:
        """One operation: an entry of the log with every ref, note and ledger op it moved, or a ledger op."""
        from git_lanes.domain import oplog_steps

        kind, found, _ = self._find_operation(op)
        if kind == "lanes":  # a sync's ops are read from its ledger spans
            steps = oplog_steps.of_entry(self.ctx, found)
            return {"kind": "lanes", **found.to_dict(), "ledger": [s.to_dict() for s in steps], "commit": found.commit}
        commit, record = found
        return {"kind": "ledger", "commit": commit, **record.to_dict()}

    def _find_operation(self, prefix: str) -> tuple[str, Any, list[OpEntry]]:
        from git_lanes import ledger
        from git_lanes.domain import ledger_undo, oplog, oplog_steps
        from git_lanes.model.names import resolve_prefix, shown_id

        given = prefix.strip().lower()
        if not given or given.strip("0123456789abcdef"):
            raise NotFound(f"no operation matches {shown_id(prefix)}", code="unknown_operation",
                           hint=f"see {command('op log')}")
        entries = list(oplog.entries(self.ctx, WINDOW))
        ops = ledger_undo.ledger_ops(self.ctx.store, ledger.head(self.ctx.store), WINDOW)
        candidates: dict[str, tuple[str, Any]] = {e.id: ("lanes", e) for e in entries}
        for commit, record in ops:
            candidates.setdefault(record.id, ("ledger", (commit, record)))
        chosen = resolve_prefix(given, candidates, "operation", f"see {command('op log')}", "unknown_operation")
        kind, found = candidates[chosen]
        return kind, found, entries

    def undo(self, op: str | None = None, *, actor: str | None = None, dry_run: bool = False) -> dict[str, Any]:
        """Undo operation `op` (default: the newest in `op log`). Refs move back by compare-and-swap after
        checking nothing depends on them since (else Conflict, exit 3, naming what does); what the undo
        replaces is kept under refs/lanes/backups/-undo/; ledger ops are reversed by inverse ops. The undo is
        itself an operation, so undoing it redoes. `dry_run` says what the undo would do (finishing an undo cut
        short included: `finished`, each with the lanes whose workspaces would follow) and moves nothing."""
        from git_lanes.domain import oplog, undo

        oplog.recover_unlocked(self.ctx)
        finished: list[dict[str, Any]] = []
        if undo.interrupted(self.ctx):  # a dry run says what finishing would do, and does none of it
            finished = undo.to_finish(self.ctx, list(oplog.entries(self.ctx, WINDOW))) if dry_run \
                else self._finish_undos()
        if finished and op is None:
            # The newest operation is the undo that was cut short: finishing it is what was asked for, and
            # undoing it would redo what it undid.
            return {"finished": finished, "undone": None} | ({"dry_run": True} if dry_run else {})
        waiting = undo.unfinished(self.ctx, oplog.entries(self.ctx, WINDOW)) if op is None else None
        if waiting is not None:
            # An undo cut short before it moved anything: finishing it is undoing what it was asked to undo,
            # which need not be the newest operation.
            return self._undo(waiting["undoes"], actor, dry_run, finished) | {"interrupted": waiting["undo"]}
        return self._undo(op, actor, dry_run, finished)

    def _undo(self, op: str | None, actor: str | None, dry_run: bool, finished: list[dict[str, Any]]
              ) -> dict[str, Any]:
        from git_lanes.domain import undo

        if op is None:
            newest = self.op_log(1)
            self._stop_at_irreversible(newest[0] if newest else None)
            if not newest:
                raise NotFound("nothing to undo: the operation log is empty", code="unknown_operation")
            op = newest[0]["id"]
        kind, found, entries = self._find_operation(op)
        who = actor or self.ctx.store.signature().name
        if kind == "ledger":
            return self._undo_ledger_op(found, entries, who, dry_run) | ({"finished": finished} if finished else {})
        try:
            self._refuse_irreversible(found)
        except Refused:
            if not dry_run:
                undo.abandon(self.ctx, found.id)  # an undo of it cut short waits no longer: it cannot be done
            raise
        later = entries[:entries.index(found)]
        with self._operation(f"undo {found.id[:8]}: {found.description}"[:200], who) as recorder:
            with self._writing() as ctx:
                try:
                    plan = undo.check(ctx, found, later, who)
                    if plan.blockers:
                        raise undo.blocked(ctx, plan)
                except (Conflict, StaleState):
                    if not dry_run:
                        undo.abandon(ctx, found.id)
                    raise
                if dry_run:
                    return {"undone": found.id, "description": found.description, "dry_run": True,
                            "moves": [{"ref": m.ref, "from": m.new, "to": m.old} for m in found.moves
                                      if m.ref not in plan.gone], "gone": plan.gone,
                            "notes": len(found.notes), "ledger": plan.ledger_ops} | (
                        {"finished": finished} if finished else {})
                result = undo.perform(ctx, plan, recorder)
        return result | {"op": self._newest_id()} | ({"finished": finished} if finished else {})

    def _stop_at_irreversible(self, newest: dict[str, Any] | None) -> None:
        """Refuse an undo given no operation when the newest operation is one undo cannot reverse: a ledger op
        newer than the `newest` row of `op log` (which lists only what undo can reverse), or an op the command
        of that row appended itself (a `task done` sent back for review). Undoing the one before it instead,
        or undoing nothing and saying it was undone, is not what was asked."""
        from git_lanes import ledger
        from git_lanes.domain import ledger_undo, oplog
        from git_lanes.domain.coordination import FOLD

        for _, record in ledger_undo.ledger_ops(self.ctx.store, ledger.head(self.ctx.store), WINDOW):
            if newest is not None and record.time <= newest["time"]:
                break
            if ledger_undo.stops_undo(record.type):
                what = FOLD.summary(record, record.result or {})
                raise self._not_undoable(f"the newest operation, {record.type} {record.id[:8]} ({what}), cannot "
                                         "be undone")
        if newest is None or newest["kind"] != "lanes":
            return
        entry = next(oplog.entries(self.ctx, 1), None)
        # What a sync brought (its spans) is other machines' work: undoing the sync reverses what it can of it.
        step = next((s for s in entry.ledger if ledger_undo.stops_undo(s.type)), None) \
            if entry is not None and entry.id == newest["id"] else None
        if entry is not None and step is not None:
            raise self._not_undoable(f"the newest operation, {entry.id[:8]} ({entry.description}), cannot be undone: "
                                     f"undo cannot reverse its {step.type} {step.id[:8]}")

    def _refuse_irreversible(self, entry: OpEntry) -> None:
        """Refuse an undo of an operation that appended an op undo cannot reverse (a handoff, a review, a
        publication): undoing the rest would leave that op standing and report the operation undone. What a
        sync brought is other machines' work, left out as the implicit undo leaves it out."""
        from git_lanes.domain import ledger_undo

        step = next((s for s in entry.ledger if ledger_undo.stops_undo(s.type)), None)
        if step is not None:
            raise Refused(f"operation {entry.id[:8]} ({entry.description}) cannot be undone: undo cannot reverse "
                          f"its {step.type} {step.id[:8]}", code="not_undoable",
                          hint=f"see what it did with {command('op show', entry.id[:8])}")

    @staticmethod
    def _not_undoable(message: str) -> Refused:
        return Refused(message, code="not_undoable",
                       hint=f"to undo an older operation, name it: {command('undo', 'OP')} ({command('op log')} "
                            "lists them)")

    def _finish_undos(self) -> list[dict[str, Any]]:
        """Bring the workspaces of undos that died after moving their refs along with them."""
        from git_lanes.domain import oplog, undo

        with self._writing() as ctx:
            oplog.recover(ctx)  # their entries first: the undo's own is how it is found
            return undo.finish_interrupted(ctx, list(oplog.entries(ctx, WINDOW)))

    def _undo_ledger_op(self, found: tuple[str, ledger.Op], entries: list[OpEntry], actor: str,
                        dry_run: bool) -> dict[str, Any]:
        from git_lanes import ledger
        from git_lanes.domain import ledger_undo, oplog, undo
        from git_lanes.domain.coordination import FOLD
        from git_lanes.model.oplog import OpEntry
        from git_lanes.model.refs import LEDGER
        from git_lanes.store import RefUpdate

        commit, original = found
        redone = oplog.active_undo(original.id, entries)
        if redone is not None:
            raise StaleState(f"ledger op {original.id[:8]} is already undone (by {redone.id[:8]})",
                                 code="already_undone", hint=f"{command('undo', redone.id[:8])} redoes it")
        summary = FOLD.summary(original, original.result or {})
        with self._operation(f"undo {original.id[:8]}: {summary}"[:200], actor) as recorder:
            recorder.undoes = original.id
            with self._writing() as ctx:
                head = ledger.head(ctx.store)
                inverse = ledger_undo.inverse(ctx.store, commit, actor, ctx.now())
                plan = undo.Plan(OpEntry(original.id, original.time, original.actor, summary),
                                 blockers=ledger_undo.blockers(ctx.store, head, inverse, commit))
                if plan.blockers:
                    raise undo.blocked(ctx, plan)
                new_head, result = ledger.apply_op(ctx.store, head, inverse, FOLD)
                if new_head is None:
                    raise Conflict(result.get("message") or "the undo no longer holds",
                                        code=result.get("error") or "conflict", hint=result.get("hint"))
                if dry_run:
                    return {"undone": original.id, "description": summary, "dry_run": True,
                            "ledger": [inverse.id], "records": result.get("records", [])}
                ctx.store.update_refs([RefUpdate(LEDGER, new_head, head, f"lanes ledger: {ledger_undo.TYPE} "
                                                                         f"{inverse.id}")])
        return {"undone": original.id, "description": summary, "ledger": [inverse.id],
                "records": result.get("records", []), "op": self._newest_id()}

    def _newest_id(self) -> str | None:
        from git_lanes.domain import oplog

        return next((e.id for e in oplog.entries(self.ctx, 1)), None)
