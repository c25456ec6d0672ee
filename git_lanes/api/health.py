"""`doctor`'s checks of the repository's own state: refs, notes, the ledger, the operation log and
workspaces. Each finding that is safe to repair carries its repair, which `doctor --fix` runs; the rest are
left for a person, with a hint.

Safe means nothing is lost: an abandoned lock file no process holds, a decision a killed process left half
made (finished as the next writer would), the note of a state that no longer exists, git's record of a
workspace deleted or moved by hand, a workspace's lost .git file (while git still records the workspace), a
clean workspace of a deleted lane (its head kept under the lane's deletion marker). A ref git-lanes would
never write, a damaged record, a workspace with unsaved edits or a broken one is for a person to judge."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

from git_lanes import ledger
from git_lanes.api.doctor import Where, check, finding
from git_lanes.domain import lanes, stored, transitions, upkeep
from git_lanes.domain.sync_rules import ref_problem
from git_lanes.errors import LanesError, command
from git_lanes.model import refs
from git_lanes.model.records import Transition
from git_lanes.model.text import quoted
from git_lanes.store import housekeeping, stale

SHOWN = 5
# A lock on a ref git-lanes does not guard with its own writers' lock is taken for left behind past this age.
OLD_LOCK_SECONDS = 300


def _some(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


@check("refs")
def _refs(api: Any, where: Where) -> list[dict[str, Any]]:
    store = api.ctx.store
    found = []
    synced = {ref: oid for ref, oid in store.list_refs("refs/lanes/").items() if not refs.is_local(ref)}
    bad = [f"{ref} ({why})" for ref, oid in sorted(synced.items())
           if (why := ref_problem(ref, api.trunk, store.object_kind(oid)))]
    if bad:
        found.append(finding("fail", f"refs git-lanes would never write: {_some(bad)}",
                             "a person decides: `git update-ref -d REF` removes one (sync leaves them alone)"))
    ours, others = _ref_locks(store.common_dir, api.trunk)
    if ours:
        found.append(finding("warn", f"lock files left on refs git-lanes writes: {_some(ours)}",
                             "a killed process left them; --fix removes those no process holds",
                             repair=lambda: _clear_locks(api, ours)))
    if others:
        found.append(finding("warn", f"lock files older than {OLD_LOCK_SECONDS // 60} minutes on refs git-lanes "
                                     f"leaves to a person: {_some(others)}",
                             "git refuses to move those refs while they exist; if no git process is running, "
                             "delete them"))
    half = [t.id[:8] for t in transitions.pending_for(api.ctx) if t.status != "proposed"
            or store.read_ref(refs.lane_ref(t.lane, api.trunk)) == t.state]
    if half:
        found.append(finding("warn", f"decisions a killed process left half made: {_some(half)}",
                             "the next write finishes them; --fix does it now", repair=lambda: _finish(api)))
    return found or [finding("ok", f"{len(synced)} lanes refs are what git-lanes writes")]


def _ref_locks(common_dir: Path, trunk: str) -> tuple[list[str], list[str]]:
    """Lock files on refs: on those git-lanes writes (its own, its remote copies, its notes, the trunk) and
    on the others. Outside refs/lanes/ only an old one counts: a git at work holds such a lock for moments."""
    ours: list[str] = []
    others: list[str] = []
    now = time.time()
    for lock in sorted([*(common_dir / "refs").rglob("*.lock"), common_dir / "packed-refs.lock"]):
        ref = lock.relative_to(common_dir).as_posix()[:-len(".lock")]
        try:
            old = now - lock.stat().st_mtime >= OLD_LOCK_SECONDS
        except OSError:  # gone meanwhile, or never there (packed-refs.lock)
            continue
        if ref.startswith("refs/lanes/"):  # only git-lanes moves these: any lock there is reported at once
            ours.append(str(lock))
        elif old:
            owned = stale.owned_ref(ref) or ref.startswith(refs.REMOTE_PREFIX) or ref == f"refs/heads/{trunk}"
            (ours if owned else others).append(str(lock))
    return ours, others


def _clear_locks(api: Any, locks: list[str]) -> None:
    with api.ctx.store.locked():
        left = [lock for lock in locks if not stale.clear_if_stale(Path(lock))]
    if left:
        raise LanesError(f"still held: {_some(left)}", code="lock_held")


def _finish(api: Any) -> None:
    with api._writing():  # recovery runs on entering
        pass


@check("notes")
def _notes(api: Any, where: Where) -> list[dict[str, Any]]:
    store = api.ctx.store
    orphans, count = [], 0
    for target, text in store.iter_notes(refs.NOTES):
        count += 1
        try:
            record = Transition.from_note(text)
        except (LanesError, ValueError):
            record = None
        if record is not None and store.object_kind(target) is None:
            orphans.append(target)
    found = []
    try:
        # what history sets aside: malformed records, and notes on lanes states that hold none (a note
        # people add to a commit of their own is theirs)
        unreadable = [f"{u.key[:8]} ({u.reason})" for u in transitions.unreadable_notes(api.ctx)]
    except LanesError as exc:  # a record of a newer format version fails every listing: say so
        unreadable = [exc.message]
    if unreadable:
        found.append(finding("fail", f"transition notes this git-lanes cannot read: {_some(unreadable)}",
                             "see `git notes --ref=lanes show OID`; a newer git-lanes may have written them; "
                             "listings leave a malformed one out until it is fixed or removed"))
    if orphans:
        found.append(finding("warn", f"notes of states that no longer exist: {_some([o[:8] for o in orphans])}",
                             "--fix drops them (as `git notes prune` would)", repair=lambda: _drop_notes(api, orphans)))
    return found or [finding("ok", f"{count} transition notes readable")]


def _drop_notes(api: Any, targets: list[str]) -> None:
    with api._writing() as ctx:
        gone = [t for t in targets if ctx.store.object_kind(t) is None]
        ctx.store.update_refs([ctx.store.write_notes(refs.NOTES, dict.fromkeys(gone),
                                                     f"lanes: doctor drops {len(gone)} notes of missing states")])


@check("ledger")
def _ledger(api: Any, where: Where) -> list[dict[str, Any]]:
    store = api.ctx.store
    head = ledger.head(store)
    if head is None:
        return [finding("ok", "the ledger is empty")]
    try:
        op = ledger.read_op(store, head)
    except LanesError as exc:
        return [finding("fail", f"the ledger's last op cannot be read: {exc.message}",
                        exc.hint or "see `git log -1 refs/lanes/ledger`; a newer git-lanes may have written it")]
    try:
        state = ledger.state_at(store, head)
    except LanesError as exc:  # its own hint knows best (a shallow fetch: fetch the ledger whole)
        return [finding("fail", f"the ledger's state cannot be read: {exc.message}",
                        exc.hint or "see `git log refs/lanes/ledger`: a peer's commit holds it")]
    bad, count = [], 0
    for top in (*stored.SHAPES, "publish", "pruned"):
        for path in state.files(top):
            count += 1
            try:
                record = state.get(path)
                if record is not None:
                    stored.checked(path, record)  # the shape listings need, or they leave it out
            except LanesError as exc:
                bad.append(_unreadable(path, exc.message))
    if bad:
        return [finding("fail", f"ledger records that cannot be read: {_some(bad)}",
                        "a sync from a newer git-lanes, or an edit by hand: `git log refs/lanes/ledger` shows the "
                        "op that wrote PATH (its `edits`, or the tree of a checkpoint)")]
    foreign = ledger.log.newer_ops(store, head)
    if foreign:
        described = [f"{commit[:8]} (format {found})" for commit, found in foreign]
        return [finding("warn", f"ledger ops a newer git-lanes wrote, which this one reads only as the state they "
                                f"left: {_some(described)}",
                        "upgrade git-lanes on this machine (a sync refuses to replay this machine's ops onto them)")]
    unaware = ledger.log.unaware_checkpoints(store, head)
    if unaware:
        described = [f"{commit[:8]} (over {deltas} delta commits)" for commit, deltas in unaware]
        return [finding("warn", "ledger commits a git-lanes from before delta commits wrote, reading a state without "
                                f"the records of the delta commits before them: {_some(described)}",
                        "upgrade git-lanes on every machine that writes this ledger; `git log refs/lanes/ledger` "
                        "shows what those deltas wrote (their `edits`), to redo what is missing")]
    return [finding("ok", f"{count} ledger records readable; last op {op.type} by {op.actor}")]


def _unreadable(path: str, message: str) -> str:
    """A record that cannot be read, as the finding lists it: its path once, quoted and cut at 80 characters
    (a peer names it: any length, any character), then why. The error names the path itself too."""
    prefix = f"ledger record {path} "
    why = message[len(prefix):] if message.startswith(prefix) else message
    return f"{quoted(path)} ({why})"


@check("queue")
def _queue(api: Any, where: Where) -> list[dict[str, Any]]:
    from git_lanes.api.upkeep import clear_queue, queue_leftovers
    from git_lanes.store.append_queue import STALE_SECONDS

    found = queue_leftovers(api.ctx.store)
    if found.in_the_way:
        return [finding("warn", "the ledger's append queue cannot be made: lanes-queue in the git directory is not a "
                                "folder, so a ledger append that finds the lock taken waits for it instead of "
                                "queueing (slower with many writers)",
                        "the name is git-lanes' own: move that file away (`git rev-parse --git-common-dir` "
                        "says where it is)")]
    if not found.files():
        return [finding("ok", "the ledger's append queue holds nothing a killed process left")]
    parts = [f"entries of writers that are gone: {_some(list(found.dead))}"] if found.dead else []
    if found.stale:
        parts.append(f"files nobody came for in {STALE_SECONDS / 60:.0f} minutes: {_some(list(found.stale))}")
    if found.journal:
        parts.append("the round journal (batch) of a holder that died")
    return [finding("warn", f"the ledger's append queue (lanes-queue) holds what no live process owns: "
                            f"{'; '.join(parts)}",
                    f"killed git-lanes processes left them: --fix (or {command('gc')}) removes them, as the next "
                    "ledger append would, settling a journal's ops first",
                    repair=lambda: clear_queue(api.ctx.store))]


@check("oplog")
def _oplog(api: Any, where: Where) -> list[dict[str, Any]]:
    """The operation log, and the undos cut short that the next `undo` finishes."""
    from git_lanes.domain import undo_marks

    cut_short = [finding("warn", f"{u['message']}: {u['hint']}", "its refs may have moved without its workspaces "
                         "following them", repair=api._finish_undos, undo=u["undo"], undoes=u["undoes"])
                 if u["started"] else
                 # Finishing it is undoing an operation, which is for the person who asked, not for a repair.
                 finding("warn", f"{u['message']}: {u['hint']}", "nothing moved yet; --fix leaves it, since "
                         "finishing it undoes an operation", undo=u["undo"], undoes=u["undoes"])
                 for u in undo_marks.interrupted(api.ctx)]
    return cut_short + _oplog_chain(api)


def _oplog_chain(api: Any) -> list[dict[str, Any]]:
    """The operation log `undo` and `op log` read: each entry a commit whose first parent is the one before,
    back to the first; a commit gone (lost by hand, or by a copy of the git directory that left objects
    out) leaves every entry below it unreachable to undo. What is lost cannot come back: --fix ends the log
    where it breaks, keeping every entry still readable (oplog_chain.restart); the next operation would start
    it afresh anyway, keeping none."""
    from git_lanes.domain import oplog_chain
    from git_lanes.model.oplog import OpEntry

    breaks: list[tuple[str | None, str, str | None, int]] = []
    count = 0
    for commit, info in oplog_chain.commits(api.ctx, api.ctx.store.read_ref(refs.OPLOG), None,
                                            lambda *at: breaks.append(at)):
        try:
            OpEntry.from_message(info.message, commit)
        except LanesError as exc:
            return [finding("fail", f"the operation log cannot be read: entry {commit[:8]}: {exc.message}",
                            f"see `git log -1 {commit}`; a newer git-lanes may have written it")]
        count += 1
    if breaks:
        (child, commit, kind, count), = breaks
        what = oplog_chain.unreadable(commit, kind)
        problem = f"{refs.OPLOG} names {what}" if child is None else \
            f"its chain breaks at entry {child[:8]} (number {count} from the newest): its parent is {what}"
        above = "the entry" if count == 1 else f"the {count} entries"
        kept = (f"sets it back to the newest earlier head `git reflog {refs.OPLOG}` names that is still here, "
                "else starts it afresh") if child is None else f"ends it there, keeping {above} above"
        return [finding("fail", f"the operation log cannot be read: {problem}",
                        f"undo cannot reach past it; --fix {kept} (lanes, notes and the ledger stay as they are)",
                        repair=lambda: oplog_chain.restart(api.ctx))]
    return [finding("ok", f"{count} operation log entries readable" if count else "the operation log is empty")]


@check("spares")
def _spares(api: Any, where: Where) -> list[dict[str, Any]]:
    from git_lanes.store import spare_refs

    common_dir = str(api.ctx.store.common_dir)
    if not spare_refs.recycles(common_dir):
        return [finding("ok", "the ledger's ref files are not reused here (a file system in memory, or no leases)")]
    problem = spare_refs.obstacle(common_dir, refs.LEDGER)
    if problem is None:
        return [finding("ok", "the ledger's ref files are reused on this disk")]
    return [finding("warn", f"the ledger's appends cannot reuse the ref's files: {problem}, so each creates and "
                            "frees one (on ext4 without a journal, about half as fast)",
                    "the name is git-lanes' own: move that away (`git rev-parse --git-common-dir` says where it "
                    "is); the next append makes the folder")]


@check("workspaces")
def _workspaces(api: Any, where: Where) -> list[dict[str, Any]]:
    ctx = api.ctx
    store = ctx.store
    base = (store.root / refs.WORKSPACES_DIR).resolve()
    found: list[dict[str, Any]] = []
    records = housekeeping.worktree_records(store)
    registered = {Path(r.path).resolve() for r in records}
    moved = _moved_here(base, registered)
    for path, _ in moved:
        found.append(finding("warn", f"workspace {path} was moved here by hand: git still looks for it elsewhere",
                             "--fix reconnects it (`git worktree repair`)",
                             repair=partial(housekeeping.repair_worktree, store, str(path))))
    left_behind = {old for _, old in moved}
    found += _moved_away(api, records, base)
    broken = _broken(api, {path for path, _ in moved}, found)
    missing: list[dict[str, Any]] = []
    for record in records[1:]:
        path = Path(record.path)
        if record.locked:
            found.append(finding("warn", f"workspace {path} is locked ({record.locked})",
                                 f"a person (or git-lanes, as the reason says) locked it; `git worktree unlock "
                                 f"{path}` when it may go"))
        elif (record.prunable or not path.exists()) and path.resolve() not in left_behind and path not in broken:
            missing.append(_missing(api, where, record))
    # Reconnected first: --fix's `git worktree prune` forgets every record whose folder is gone.
    found += sorted(missing, key=lambda f: "moved_to" not in f)
    orphans = upkeep.Candidates()
    upkeep.orphan_workspaces(ctx, float("inf"), orphans)
    for entry in orphans.workspaces:
        found.append(finding("warn", f"workspace of {entry['lane']!r} has no lane (deleted)",
                             "--fix removes it (its head is kept under refs/lanes/deleted/)",
                             repair=partial(_remove_orphan, api, entry)))
    for entry in orphans.kept:
        held = "git repositories of its own" if entry["reason"] == "nested_repository" else "unsaved edits"
        why = "is broken" if entry["reason"] == "workspace_broken" else f"holds {held}: {_some(entry['paths'])}"
        found.append(finding("warn", f"workspace of {entry['lane']!r} has no lane but {why}", entry["hint"]))
    index_locks = [p for p in (store.common_dir / "worktrees").glob("*/index.lock")] \
        if (store.common_dir / "worktrees").is_dir() else []
    if index_locks:
        found.append(finding("warn", f"index lock files left in workspaces: {_some([str(p) for p in index_locks])}",
                             "--fix removes those no process holds",
                             repair=lambda: _clear_locks(api, [str(p) for p in index_locks])))
    return found or [finding("ok", f"{len(records) - 1} workspaces where git expects them")]


def _missing(api: Any, where: Where, record: housekeeping.GitWorktree) -> dict[str, Any]:
    """A workspace git records at a place that is gone. git cannot tell a folder deleted from one moved with
    `mv` (it says "prunable"), nor can we in general; a move next to where it stood, next to the repository or
    into the home folder is found (one listing each) and reconnected by --fix, never forgotten. Anything else
    is told as either, with the way back for a move: forgetting it takes no file of a moved one, but leaves it
    no longer a worktree."""
    store = api.ctx.store
    path = Path(record.path)
    near = [path.parent, store.root, store.root.parent, where.home]
    moved = housekeeping.moved_to(store, path, near)
    if moved is not None:
        return finding("warn", f"workspace {path} was moved to {moved} by hand (not with `git worktree move`): git "
                               "still looks for it where it was",
                       f"--fix reconnects it (`git worktree repair {moved}`), unsaved edits and all",
                       repair=partial(housekeeping.repair_worktree, store, str(moved)), moved_to=str(moved))
    why = f" (git: {record.prunable})" if record.prunable and record.prunable != "prunable" else ""
    return finding("warn", f"workspace {path} is missing: deleted, or moved by hand{why}",
                   f"if it was moved, `git worktree repair NEW_PATH` (in {store.root}) reconnects it, unsaved edits "
                   "and all; if it was deleted, --fix forgets it (`git worktree prune`); the lane and its states "
                   "stay", repair=lambda: housekeeping.prune_worktrees(store))


def _broken(api: Any, moved: set[Path], found: list[dict[str, Any]]) -> set[Path]:
    """Report each lane whose workspace path holds something else than its worktree (as `status` shows it),
    but for a workspace moved here by hand (reported, and repaired, as such); return those paths, and the
    places git's records name for those --fix reconnects (a lost .git, a repository moved by hand)."""
    ctx = api.ctx
    paths = set()
    for name in lanes.lane_names(ctx):
        _, problem = lanes.workspace_state(ctx, name)
        path = lanes.default_workspace(ctx, name)
        if problem is None or path.resolve() in moved:
            continue
        paths.add(path)
        recorded = housekeeping.reconnectable(ctx.store, path)
        if recorded is not None:
            paths.add(recorded)
        hint = f"--fix reconnects it (`git worktree repair {path}`)" if recorded else lanes.repair_hint(ctx, name)
        found.append(finding("warn", f"the workspace of lane {name!r} is broken: {problem}", hint,
                             repair=partial(housekeeping.repair_worktree, ctx.store, str(path)) if recorded else None))
    return paths


def _moved_away(api: Any, records: list[housekeeping.GitWorktree], base: Path) -> list[dict[str, Any]]:
    """A lane with no workspace whose worktree a person moved out of .lanes/workspaces (`git worktree move`):
    git records it elsewhere, detached at the lane's head, and its git state still bears the name git-lanes
    gave it (the lane's last part, a number added on a clash; git keeps that name when a worktree moves). A
    person's own detached worktrees have names of their own and are left alone."""
    import re

    ctx = api.ctx
    outside = [r for r in records[1:] if r.detached and r.head and not r.prunable
               and base not in Path(r.path).resolve().parents]
    found = []
    for name in lanes.lane_names(ctx):
        if name == ctx.trunk or not outside or lanes.workspace_state(ctx, name) != (None, None):
            continue
        head = ctx.store.read_ref(refs.lane_ref(name, ctx.trunk))
        leaf = re.escape(name.rsplit("/", 1)[-1])
        for record in outside:
            path = Path(record.path)
            admin = housekeeping.admin_name(path) if record.head == head else None
            if admin is None or not re.fullmatch(leaf + r"\d*", admin):
                continue
            home = lanes.default_workspace(ctx, name)
            found.append(finding("warn", f"the workspace of lane {name!r} was moved to {path}: git-lanes looks "
                                         f"for it at {home}",
                                 f"--fix moves it back (`git worktree move {path} {home}`), unsaved edits and all"
                                 if not record.locked else f"it is locked ({record.locked}): unlock it, then "
                                 f"`git worktree move {path} {home}`",
                                 repair=None if record.locked else
                                 partial(housekeeping.move_worktree, ctx.store, path, home)))
            break
    return found


def _moved_here(base: Path, registered: set[Path]) -> list[tuple[Path, Path]]:
    """Folders under .lanes/workspaces that are worktrees git does not know at that place, each with the
    place git still has on record for it."""
    if not base.is_dir():
        return []
    found = []
    for dot in sorted(base.rglob(".git")):
        folder = dot.parent.resolve()
        if not dot.is_file() or folder in registered:
            continue
        text = dot.read_text(errors="replace")
        if not text.startswith("gitdir:"):
            continue
        admin = Path(text[len("gitdir:"):].strip())
        try:
            old = Path((admin / "gitdir").read_text().strip()).parent.resolve()
        except OSError:
            continue
        found.append((folder, old))
    return found


def _remove_orphan(api: Any, entry: dict[str, Any]) -> None:
    with api._writing() as ctx:
        if ctx.store.read_ref(refs.lane_ref(entry["lane"], ctx.trunk)) is None:
            upkeep.remove_workspace(ctx, entry)

