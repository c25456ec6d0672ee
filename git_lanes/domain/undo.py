"""Undoing one recorded operation (git_lanes/model/oplog.py): every ref it moved goes back by compare-and-swap,
every transition note it changed gets its old text back, every ledger op it appended is reversed by its
inverse op, and workspaces follow, all decided before anything moves.

Refused (a Conflict, exit 3, naming what) when something depends on the operation since: a ref it moved has
moved again, a note it wrote was rewritten, a ledger record it changed changed again, another lane or a
proposal was built on a state it introduced, a workspace it changed was edited. What the undo replaces is
kept under refs/lanes/backups/-undo/<id>, and the undo is itself an operation in the log, so undoing it redoes.
Unsaved edits in a workspace are never overwritten: files are moved path by path, and an edited one is left
as typed and reported as needing attention (as a promotion does)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

from git_lanes import ledger
from git_lanes.domain import attention, ledger_undo, lanes, oplog, restore, undo_marks
from git_lanes.domain.context import Context
from git_lanes.domain.coordination import FOLD
from git_lanes.errors import Conflict, Refused, StaleState, command
from git_lanes.model import refs
from git_lanes.model.oplog import OpEntry, RefMove
from git_lanes.store import RefUpdate, journal


@dataclass
class Plan:
    entry: OpEntry
    ledger_head: str | None = None
    ledger_base: str | None = None
    ledger_ops: list[str] = field(default_factory=list)
    blockers: list[dict] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)  # backup refs the operation made that gc removed since


def short(oid: str | None) -> str:
    return oid[:8] if oid else "nothing"


def describe_ref(ref: str, trunk: str) -> str:
    lane = oplog.lane_of(ref, trunk)
    if lane is not None:
        return f"lane {lane}"
    if ref.startswith(refs.PROPOSALS):
        return f"proposal {ref[len(refs.PROPOSALS):][:8]}"
    return ref


def check(ctx: Context, entry: OpEntry, later: list[OpEntry], actor: str) -> Plan:
    """Everything that stops undoing `entry` (`later`: the entries after it, newest first). Reads only,
    except the inverse ledger commits it prepares (objects no ref points to until the undo moves)."""
    undone_by = oplog.active_undo(entry.id, later)
    if undone_by is not None:
        raise StaleState(f"operation {entry.id[:8]} is already undone (by {undone_by.id[:8]})",
                         code="already_undone", hint=f"{command('undo', undone_by.id[:8])} redoes it")
    plan = Plan(entry)
    store = ctx.store
    moved = {m.ref for m in entry.moves}
    for move in entry.moves:
        current = store.read_ref(move.ref)
        if current is None and move.old is None and move.ref.startswith(refs.BACKUPS):
            # A backup the operation made, removed since (gc): undoing would remove it, so nothing depends
            # on it; what it kept cannot come back, and the undo says so.
            plan.gone.append(move.ref)
            continue
        if current != move.new:
            plan.blockers.append({"ref": move.ref, "expected": move.new, "found": current,
                                  **_moved_by(later, move.ref, current)})
        if move.old is not None and store.object_kind(move.old) != "commit":
            plan.blockers.append({"ref": move.ref, "expected": move.old, "found": None, "pruned": True,
                                  "reason": f"{short(move.old)} is gone from the repository (pruned)"})
    for note in entry.notes:
        if store.note_blob(refs.NOTES, note.object) != note.new:
            by = next((e for e in later if any(n.object == note.object for n in e.notes)), None)
            plan.blockers.append({"note": note.object, "by": by.id if by else None,
                                  "by_description": by.description if by else None})
    for move in entry.moves:
        _dependents(ctx, move, moved, plan)
    for change in entry.workspaces:
        path = lanes.workspace_path(ctx, change.lane)
        if path is None or not store.files_match(path, change.after):
            plan.blockers.append({"workspace": change.lane, "reason": "its files changed since"})
    for move in _lane_moves(ctx, entry):
        path = lanes.workspace_path(ctx, oplog.lane_of(move.ref, ctx.trunk) or "")
        if move.old is None and path is not None and restore.has_unsaved(ctx, oplog.lane_of(move.ref, ctx.trunk)
                                                                          or "", path):
            plan.blockers.append({"workspace": oplog.lane_of(move.ref, ctx.trunk), "unsaved": True,
                                  "reason": "it has unsnapshotted edits, and undoing would remove it"})
    _prepare_ledger(ctx, entry, actor, plan)
    return plan


def _moved_by(later: list[OpEntry], ref: str, current: str | None) -> dict:
    by = next((e for e in later if any(m.ref == ref and m.new == current for m in e.moves)), None)
    return {"by": by.id if by else None, "by_description": by.description if by else "outside git-lanes"}


def _dependents(ctx: Context, move: RefMove, moved: set[str], plan: Plan) -> None:
    """A state the operation introduced that undoing would take off its lane, which something else was built
    on since (another lane, a proposal): taking it away would strand that work."""
    if not move.introduced or move.new is None or (move.old is not None and ctx.store.is_ancestor(move.new,
                                                                                                  move.old)):
        return
    candidates = {refs.lane_ref(name, ctx.trunk) for name in lanes.lane_names(ctx)} | \
        set(ctx.store.list_refs(refs.PROPOSALS))
    for ref in sorted(candidates - moved):
        head = ctx.store.read_ref(ref)
        if head is not None and ctx.store.is_ancestor(move.new, head):
            plan.blockers.append({"ref": ref, "built_on": move.new,
                                  "reason": f"{describe_ref(ref, ctx.trunk)} was built on {short(move.new)} since"})


def _prepare_ledger(ctx: Context, entry: OpEntry, actor: str, plan: Plan) -> None:
    store = ctx.store
    head = ledger.head(store)
    plan.ledger_base = head
    from git_lanes.domain import oplog_steps

    steps = [step for step in reversed(oplog_steps.of_entry(ctx, entry)) if step.type in ledger_undo.UNDOABLE]
    times = [ctx.now() for _ in steps]
    # Made oldest first, though applied newest first: each inverse reads the states before and after its op,
    # and the state after the op before is then the one just read, not a read back to the last checkpoint
    # (16 commits on average; 0.96 s -> 0.22 s of CPU for a sync of 3,000 posts).
    ops = [ledger_undo.inverse(store, step.commit, actor, time) for step, time in reversed(list(zip(steps, times)))]
    ops = ledger_undo.list_later(ops[::-1])
    for step, op in zip(steps, ops):
        found = ledger_undo.blockers(store, head, op, step.commit)
        if found:
            plan.blockers += found
            continue
        new_head, result = ledger.apply_op(store, head, op, FOLD)
        if new_head is None:
            plan.blockers.append({"ledger": step.id, "reason": result.get("message")})
            continue
        head = new_head
        plan.ledger_ops.append(op.id)
    ledger.log.roll_up_after(store, len(plan.ledger_ops))
    relisting = ledger_undo.relisting(ops, actor, ctx.now())
    if relisting is not None and not plan.blockers:  # after the inverse ops; not one of them (not in the output)
        new_head, result = ledger.apply_op(store, head, relisting, FOLD)
        if new_head is None:
            plan.blockers.append({"ledger": relisting.id, "reason": result.get("message")})
        else:
            head = new_head
    plan.ledger_head = head


def blocked(ctx: Context, plan: Plan) -> Conflict:
    lines = []
    for b in plan.blockers:
        if "ref" in b and "expected" in b and "reason" not in b:
            by = f"by {b['by'][:8]} ({b['by_description']})" if b.get("by") else b.get("by_description", "")
            lines.append(f"  {describe_ref(b['ref'], ctx.trunk)} ({b['ref']}) moved to {short(b['found'])} since, "
                         f"{by}")
        elif "note" in b:
            by = f" by {b['by'][:8]} ({b['by_description']})" if b.get("by") else ""
            lines.append(f"  the transition record of {short(b['note'])} changed since{by}")
        elif "record" in b:
            by = f" by ledger op {b['by'][:8]} ({b['by_type']}, {b['by_actor']})" if b.get("by") else ""
            lines.append(f"  {b['record']} changed since{by}")
        else:
            lines.append(f"  {b.get('workspace') or b.get('ref') or b.get('ledger')}: {b['reason']}")
    if all(b.get("pruned") for b in plan.blockers):
        # nothing later to undo first: what the operation replaced is gone from the object database
        return Conflict(f"cannot undo {plan.entry.id[:8]} ({plan.entry.description}): what it replaced is gone "
                        "from the repository\n" + "\n".join(lines), code="undo_blocked",
                        details={"blockers": plan.blockers},
                        hint="git gc pruned those objects; no undo can bring them back")
    if all(b.get("unsaved") for b in plan.blockers):
        # only edits in the way, no later operation: undoing one first would not help
        return Conflict(f"cannot undo {plan.entry.id[:8]} ({plan.entry.description}): a workspace it would change "
                        "holds edits\n" + "\n".join(lines), code="undo_blocked", details={"blockers": plan.blockers},
                        hint=f"snapshot those edits ({command('commit')}) or move them out of the workspace, then undo "
                             "again")
    return Conflict(f"cannot undo {plan.entry.id[:8]} ({plan.entry.description}): later work depends on it\n"
                    + "\n".join(lines), code="undo_blocked", details={"blockers": plan.blockers},
                    hint=f"undo the later operations first (newest first; {command('op log')} lists them)")


def perform(ctx: Context, plan: Plan, recorder: oplog.Recorder) -> dict:
    """Carry out a checked plan (with the writers' lock held, inside the undo's own recorded operation).
    A marker held for as long as it runs lets the next undo finish it, should it die between moving the refs
    and bringing the workspaces along (`finish_interrupted`)."""
    marker = journal.Journal(_markers(ctx), recorder.id)
    marker.write({"undo": recorder.id, "undoes": plan.entry.id, "time": ctx.now()})
    abandon(ctx, plan.entry.id)  # an undo of it cut short before moving anything: this one is it, marked anew
    try:
        result = _perform(ctx, plan, recorder)
    except BaseException:
        if any(ctx.store.read_ref(m.ref) == m.old for m in _lane_moves(ctx, plan.entry)):
            marker.release()  # its refs moved: the next undo brings the workspaces along
        else:
            marker.close()  # nothing moved (a refusal, a locked index): it simply did not happen
        raise
    marker.close()
    return result


def _perform(ctx: Context, plan: Plan, recorder: oplog.Recorder) -> dict:
    entry, store = plan.entry, ctx.store
    recorder.undoes = entry.id
    updates = []
    moves = [m for m in entry.moves if m.ref not in plan.gone]
    kept = list(dict.fromkeys(m.new for m in moves if m.new is not None))
    if kept:
        commit = store.write_commit(store.empty_tree(), kept, f"Kept by undo of {entry.id}: {entry.description}\n")
        recorder.backup = f"{refs.UNDO_BACKUPS}{secrets.token_hex(8)}"
        updates.append(RefUpdate(recorder.backup, commit, None, f"lanes: keep what undo of {entry.id[:8]} replaces"))
    if entry.notes:
        texts = {n.object: store.read_blob(n.old).decode() if n.old else None for n in entry.notes}
        updates.append(store.write_notes(refs.NOTES, texts, f"lanes: undo {entry.id[:8]}"))
    if plan.ledger_ops:
        updates.append(RefUpdate(refs.LEDGER, plan.ledger_head, plan.ledger_base, f"lanes: undo {entry.id[:8]}"))
    prepared, removing = {}, []
    for move in _lane_moves(ctx, entry):
        lane = oplog.lane_of(move.ref, ctx.trunk) or ""
        path = lanes.workspace_path(ctx, lane)
        if path is None or move.new is None:
            continue
        if move.old is None:
            # Removed by _follow once the lane's ref is gone, never before: a kill in between leaves a clean
            # workspace of no lane, which the next undo removes, not a lane without its workspace. What would
            # refuse the removal (a repository of its own inside, a git at work there) refuses it now.
            lanes.require_removable(ctx, lane, path)
            oplog.files_moved(lane)  # so that undoing this undo makes the workspace again
            removing.append(lane)
        elif move.files:
            worktree = attention.prepare_move(ctx, lane, move.new, move.old)
            if worktree is not None:
                prepared[lane] = worktree
    lane_refs = {m.ref for m in _lane_moves(ctx, entry)}
    order = [m for m in moves if m.ref not in lane_refs] + [m for m in moves if m.ref in lane_refs]
    # The unsaved edits the operation kept go back into their workspace below; their backup ref goes only
    # after that, so an undo killed in between leaves them where `git lanes` and plain git still show them.
    edits = [m for m in order if _kept_edits(ctx, entry, m)]
    message = f"lanes: undo {entry.id[:8]}: {entry.description}"[:200]
    store.update_refs(updates + [RefUpdate(m.ref, m.old, m.new, message) for m in order if m not in edits])
    workspaces = _follow(ctx, entry, prepared, removing, plan.gone)
    if edits:
        store.update_refs([RefUpdate(m.ref, m.old, m.new, message) for m in edits])
    for change in entry.workspaces:
        path = lanes.require_workspace(ctx, change.lane)
        store.apply_checkout(path, store.plan_checkout(path, change.before, force=True))
        oplog.workspace_changed(change.lane, change.after, change.before)
        workspaces.append({"lane": change.lane, "path": str(path), "restored": change.before})
    return {"undone": entry.id, "description": entry.description, "backup": recorder.backup,
            "moves": [{"ref": m.ref, "from": m.new, "to": m.old} for m in moves], "gone": plan.gone,
            "notes": len(entry.notes), "ledger": plan.ledger_ops, "workspaces": workspaces}


def _markers(ctx: Context) -> str:
    return undo_marks.folder(ctx)


def interrupted(ctx: Context) -> bool:
    """Whether an undo died before its workspaces followed its refs (a cheap look, taking no lock)."""
    return journal.has_orphans(_markers(ctx))


def finish_interrupted(ctx: Context, entries: list[OpEntry]) -> list[dict]:
    """Finish every undo whose process died before its workspaces followed (writers' lock held, the dead
    processes' log entries recovered, `entries` the log newest first): each lane the undo moved back gets
    its workspace along, path by path, leaving unsaved edits as typed; a lane whose ref did not move keeps
    its files (what the undo noted for it is dropped as the next snapshot there would). The undo itself
    stays as recorded: undoing it redoes. An undo that died before moving anything keeps its mark: it is
    still to do (`unfinished`)."""
    finished = []
    unmoved = {str(m.get("undo")) for m in undo_marks.waiting(ctx, undo_marks.headers(ctx), entries)}
    for path, records, fd in journal.orphans(_markers(ctx)):
        header = next((r for r in records if r.get("undoes")), None)
        if header is not None and header.get("undo") in unmoved:
            os.close(fd)
            continue
        try:
            target = next((e for e in entries if header and e.id == header["undoes"]), None)
            if header is None or target is None:
                continue  # nothing announced, or an operation past the log's window: nothing to follow
            done = next((e for e in entries if e.id == header.get("undo")), None)
            workspaces = _resume(ctx, target)
            if workspaces is not None:
                finished.append({"undo": done.id if done else None, "undone": target.id,
                                 "description": target.description, "workspaces": workspaces})
        finally:
            journal.finish(path, fd)
    return finished


def to_finish(ctx: Context, entries: list[OpEntry]) -> list[dict]:
    """What `finish_interrupted` would finish, found by looking only (a dry run's answer; `entries` the log
    newest first, the dead processes' entries recovered): each undo cut short after a lane's ref of it moved
    back, with the lanes whose workspaces would follow."""
    marks = undo_marks.headers(ctx)
    unmoved = {str(m.get("undo")) for m in undo_marks.waiting(ctx, marks, entries)}
    found = []
    for header in marks:
        target = next((e for e in entries if e.id == header.get("undoes")), None)
        if target is None or header.get("undo") in unmoved:
            continue
        back = _moved_back(ctx, target)
        if back:
            done = next((e for e in entries if e.id == header.get("undo")), None)
            found.append({"undo": done.id if done else None, "undone": target.id, "description": target.description,
                          "lanes": [oplog.lane_of(m.ref, ctx.trunk) for m in _lane_moves(ctx, target)
                                    if m.ref in back]})
    return found


def unfinished(ctx: Context, entries: Iterable[OpEntry]) -> dict | None:
    """The newest undo cut short before it moved any ref (`entries`: the log newest first, the dead processes'
    entries recovered): {"undo": its id, "undoes": the operation it was asked to undo}. Finishing it is
    undoing that operation, not the newest one."""
    if not interrupted(ctx):
        return None
    found = undo_marks.waiting(ctx, undo_marks.headers(ctx), entries)
    return found[0] if found else None


def abandon(ctx: Context, target: str) -> None:
    """Drop the marks of undos of operation `target` that died before moving anything (those that moved refs
    were finished first, `finish_interrupted`): it is being undone again under a mark of its own, or its undo
    was refused, so it no longer waits to be finished."""
    for path, records, fd in journal.orphans(_markers(ctx)):
        header = next((r for r in records if r.get("undoes")), None)
        if header is not None and header.get("undoes") == target:
            journal.finish(path, fd)
        else:
            os.close(fd)


def _resume(ctx: Context, entry: OpEntry) -> list[dict] | None:
    """The workspaces of an undo of `entry` cut short, brought along; None when none of its lanes moved."""
    store = ctx.store
    back = _moved_back(ctx, entry)
    prepared = {}
    for move in _lane_moves(ctx, entry):
        lane = oplog.lane_of(move.ref, ctx.trunk) or ""
        path = lanes.workspace_path(ctx, lane)
        if path is not None and attention.pending(ctx, path):
            prepared[lane] = path
    reports = _follow(ctx, entry, prepared, _left_behind(ctx, entry, back), [], only=back)
    if not back:
        return None
    for change in entry.workspaces:  # a restore's files, put back only where they are still as it left them
        path = lanes.workspace_path(ctx, change.lane)
        if path is not None and store.files_match(path, change.after):
            store.apply_checkout(path, store.plan_checkout(path, change.before, force=True))
            reports.append({"lane": change.lane, "path": str(path), "restored": change.before})
    return reports


def _moved_back(ctx: Context, entry: OpEntry) -> set[str]:
    """The lanes' refs `entry` moved that an undo of it has moved back."""
    return {m.ref for m in _lane_moves(ctx, entry) if ctx.store.read_ref(m.ref) == m.old}


def _left_behind(ctx: Context, entry: OpEntry, back: set[str]) -> list[str]:
    """The lanes among those whose refs in `back` the undo took away whose workspace is still there, holding
    what the lane held (the undo was killed before removing it). One edited since is left to a person
    (`doctor` names it): nothing unsaved is ever removed."""
    left = []
    for move in _lane_moves(ctx, entry):
        lane = oplog.lane_of(move.ref, ctx.trunk) or ""
        if move.ref not in back or move.old is not None or move.new is None:
            continue
        path = lanes.workspace_path(ctx, lane)
        if path is not None and ctx.store.files_match(path, ctx.store.tree_of(move.new)):
            left.append(lane)
    return left


def _kept_edits(ctx: Context, entry: OpEntry, move: RefMove) -> bool:
    """Whether `move` made the backup ref of a moved lane's unsaved edits (lane delete --force, reset --force)."""
    return move.old is None and move.new is not None and move.ref != entry.backup and any(
        move.ref.startswith(f"{refs.BACKUPS}{oplog.lane_of(m.ref, ctx.trunk)}/") for m in _lane_moves(ctx, entry))


def _lane_moves(ctx: Context, entry: OpEntry) -> list[RefMove]:
    return [m for m in entry.moves if oplog.lane_of(m.ref, ctx.trunk) is not None]


def _follow(ctx: Context, entry: OpEntry, prepared: dict, removing: list[str], gone: list[str],
            only: set[str] | None = None) -> list[dict]:
    """Bring workspaces along with their lanes, after the refs moved (`only`: of those lanes' refs), removing
    those of `removing`, lanes the undo took away (checked: nothing unsaved there)."""
    store, reports = ctx.store, []
    for move in _lane_moves(ctx, entry):
        lane = oplog.lane_of(move.ref, ctx.trunk) or ""
        if only is not None and move.ref not in only:
            if lane in prepared:  # that lane never moved back: settling drops what the undo noted for it
                attention.finish(ctx, lane, prepared[lane])
            continue
        if move.old is None:
            path = lanes.workspace_path(ctx, lane) if lane in removing else None
            if path is not None:
                store.remove_worktree(path)
                reports.append({"lane": lane, "removed": True})
            continue
        path = lanes.workspace_path(ctx, lane)
        if move.new is None and path is None and lane != ctx.trunk and move.files:
            # undoing a deletion gives the lane back the workspace it took (a lane that had none gets none)
            path = lanes.default_workspace(ctx, lane)
            store.forget_missing_worktree(path)
            store.add_worktree(path, move.old)
            reports.append({"lane": lane, "path": str(path), "recreated": True})
        elif path is not None and lane != ctx.trunk and store.workspace_head(path) == move.new:
            store.set_workspace_head(path, move.old)
        if lane in prepared:
            oplog.files_moved(lane)
            report = attention.finish(ctx, lane, prepared[lane])
            reports.append({"lane": lane, **report})
        if path is not None:
            _restore_backups(ctx, entry, lane, path, move.old, reports, gone)
    return reports


def _restore_backups(ctx: Context, entry: OpEntry, lane: str, path, head: str, reports: list[dict],
                     gone: list[str]) -> None:
    """Unsaved edits the operation kept in a backup ref on its way (lane delete --force, reset --force) go
    back into the workspace once it is back on the state they were made on, untouched since."""
    prefix = f"{refs.BACKUPS}{lane}/"
    for move in entry.moves:
        # An undo's own backup is no lane's edits, though an older version kept it where a lane named `undo`
        # keeps its own: checked out, its empty tree would delete the workspace's files.
        if not move.ref.startswith(prefix) or move.old is not None or move.new is None or move.ref == entry.backup:
            continue
        if move.ref in gone:
            reports.append({"lane": lane, "path": str(path), "edits_removed": move.ref})
            continue
        info = ctx.store.commit_info(move.new)
        if info.parents[:1] == (head,) and ctx.store.files_match(path, ctx.store.tree_of(head)):
            ctx.store.apply_checkout(path, ctx.store.plan_checkout(path, info.tree, force=True))
            reports.append({"lane": lane, "path": str(path), "restored_edits": move.ref})
