"""Bringing a checked-out target up to date after a promotion, path by path, without ever overwriting what
a person typed, and refusing a later snapshot that would silently revert the promoted change.

Each worktree keeps `lanes-promoted.json` in its private git dir: the paths a landed promotion changed that
its files do not hold yet. An entry is *pending* from just before the target's ref moves until its file is
written (so a process killed in between leaves a record the next writer finishes), and needs *attention*
when the file had unsaved edits: the edits stay, the index is pointed at the promoted version (so `git diff`
shows the edits against it), and a snapshot is refused until the person either takes the promoted version
or stages their own (`git add`), saying they merged it."""

from __future__ import annotations

import json
from pathlib import Path

from git_lanes.domain import lanes
from git_lanes.domain.context import Context
from git_lanes.domain.wording import some
from git_lanes.errors import Conflict, UnsupportedFormat
from git_lanes.model.format import check_format
from git_lanes.model.records import Transition
from git_lanes.model.entries import GITLINK, Entry

TYPE_CHECKING = False
if TYPE_CHECKING:  # loads with the first worktree read (ctx.store.worktree_files), which a command may not need
    from git_lanes.store.worktree_files import WorktreeFiles

RECORD = "lanes-promoted.json"
FORMAT = 1


def checked_out(ctx: Context, lane: str, at: str) -> Path | None:
    """The worktree that shows `lane` and follows it (its HEAD at `at`), if any."""
    path = lanes.workspace_path(ctx, lane)
    if path is None:
        return None
    if lane != ctx.trunk and ctx.store.workspace_head(path) != at:
        return None  # a stale workspace: ensure_current refuses it until it is brought up to date
    return path


def require_writable(ctx: Context, lane: str, at: str) -> None:
    """Refuse, before anything is proposed or moved, a move of `lane` whose worktree another git command
    holds (its index is locked): the files could be written but not recorded."""
    worktree = checked_out(ctx, lane, at)
    if worktree is not None:
        ctx.store.require_index_free(worktree)


def prepare(ctx: Context, record: Transition) -> Path | None:
    """Before `record` moves its lane: note every path it changes as pending in the lane's worktree."""
    if record.base is None:
        return None
    return prepare_move(ctx, record.lane, record.base, record.state)


def prepare_move(ctx: Context, lane: str, old: str, new: str) -> Path | None:
    """Before `lane` moves from state `old` to `new` by any means: note the paths that differ as pending
    in the worktree that shows the lane, and return it (None when no worktree follows the lane). After the
    move, `finish` writes them; if the process dies first, the next snapshot there finishes it."""
    worktree = checked_out(ctx, lane, old)
    if worktree is None:
        return None
    ctx.store.require_index_free(worktree)  # checked while nothing has moved yet
    from git_lanes.domain import oplog  # loaded only when files move

    oplog.files_moved(lane)
    files = _files(ctx, worktree)
    entries = _load(files)
    # A move back (an undo) lands on an ancestor of where the lane is: only the lane having left `old` says
    # it landed, so a process killed before the ref moved does not have its files taken back later.
    back = {"back": old} if old != new and ctx.store.is_ancestor(new, old) else {}
    for change in ctx.store.diff_trees(ctx.store.tree_of(old), ctx.store.tree_of(new)):
        entries[change.path] = {"state": new, "old": _dump(change.old), "new": _dump(change.new),
                                "pending": True, "stamp": files.stamp(change.path), **back}
    _save(files, entries)
    return worktree


def finish(ctx: Context, lane: str, worktree: Path) -> dict:
    """Write each pending path whose file is untouched; leave edited ones for attention. Returns what was
    done: {"path", "updated": [...], "attention": [...]}."""
    files = _files(ctx, worktree)
    entries = _load(files)
    try:
        updated, attention = _settle(ctx, lane, files, entries)
    except Conflict as exc:
        # The lane has moved: the promotion stands, and what is left is finished by the next command here.
        return {"path": str(worktree), "updated": [], "attention": [],
                "left": {"reason": exc.message, "paths": sorted(_load(files))}}
    return {"path": str(worktree), "updated": updated, "attention": attention}


def check(ctx: Context, lane: str, worktree: Path) -> None:
    """Before snapshotting `worktree`: finish what a killed promotion left pending, and refuse while a
    file left for attention still holds the version the promotion replaced."""
    files = _files(ctx, worktree)
    entries = _load(files)
    if not entries:
        return
    _, attention = _settle(ctx, lane, files, entries)
    nested = [path for path in attention if files.nested_repository(path) == path]
    if nested:
        raise Conflict(f"a promotion removed {some(nested)} from this worktree, but each is a git repository of its "
                       "own (it holds a .git), which git-lanes never deletes; a snapshot now would record it again",
                       code="unmerged_promotion", details={"paths": attention, "worktree": str(worktree)},
                       hint="move it out of the worktree (or `git add` it to keep it, undoing the removal "
                            "here); then commit again")
    if attention:
        raise Conflict(f"a promotion changed {some(attention)} while this worktree had unsaved edits there; a snapshot "
                       f"now would revert the promoted change", code="unmerged_promotion",
                       details={"paths": attention, "worktree": str(worktree)},
                       hint="`git diff -- PATH` shows your edits against the promoted version: merge them "
                            "into it and `git add PATH`, or take the promoted version with "
                            "`git checkout -- PATH`; then commit again")


def needing(ctx: Context, lane: str, worktree: Path) -> list[str]:
    """The paths a landed promotion changed that still hold the person's unsaved edits in `worktree`
    (what `check` would refuse a snapshot over). Reads only: for status views."""
    files = _files(ctx, worktree)
    entries = _load(files)
    if not entries:
        return []
    head = lanes.lane_head(ctx, lane)
    found = []
    for path, entry in entries.items():
        if not _landed(ctx, entry, head, {}):
            continue
        old, new = _load_entry(entry["old"]), _load_entry(entry["new"])
        on_disk = files.file_entry(path)
        if on_disk == new:
            continue
        if entry["pending"]:
            # The next writer there brings an untouched file along by itself.
            untouched = on_disk == old and files.index_entry(path) == old
            if not (untouched and files.stamp(path) == entry.get("stamp")):
                found.append(path)
        elif files.index_entry(path) == new:
            found.append(path)
    return sorted(found)


def forget(ctx: Context, worktree: Path) -> None:
    """Drop every record: the worktree was just made to match a state exactly."""
    _files(ctx, worktree).write_record(RECORD, None)


def _settle(ctx: Context, lane: str, files: WorktreeFiles, entries: dict) -> tuple[list[str], list[str]]:
    head = lanes.lane_head(ctx, lane)
    before = json.loads(json.dumps(entries))
    landed: dict[str, bool] = {}
    updated, attention = [], []
    # Deletions first, then shallow paths before deep ones, so a file replacing a directory (or the other
    # way round) finds its place free.
    for path in sorted(entries, key=lambda p: (entries[p]["new"] is not None, p.count("/"), p)):
        entry = entries[path]
        if not _landed(ctx, entry, head, landed):
            del entries[path]  # that promotion never moved the lane (a process was killed before it did)
            continue
        old, new = _load_entry(entry["old"]), _load_entry(entry["new"])
        if entry["pending"]:
            done = _bring(files, path, old, new, entry.get("stamp"))
        else:
            done = _resolved(files, path, new)
        if done:
            del entries[path]
            updated.append(path)
        else:
            entry["pending"] = False
            attention.append(path)
    try:
        files.save_index()
    except Conflict:
        # Files may be written, but the index says nothing of it: keep every entry as it was, so the next
        # writer here finds those files already right and records them.
        _save(files, before)
        raise
    _save(files, entries)
    return sorted(updated), sorted(attention)


def _landed(ctx: Context, entry: dict, head: str, seen: dict[str, bool]) -> bool:
    """Whether the move that noted `entry` took effect on the lane (now at `head`)."""
    for state, wanted in ((entry["state"], True), (entry.get("back"), False)):
        if state is None:
            continue
        if state not in seen:
            seen[state] = ctx.store.is_ancestor(state, head)
        if seen[state] != wanted:
            return False
    return True


def pending(ctx: Context, worktree: Path) -> bool:
    """Whether `worktree` holds a record of paths a move noted and has not settled."""
    return bool(_load(_files(ctx, worktree)))


def _bring(files: WorktreeFiles, path: str, old: Entry | None, new: Entry | None, stamp: list | None) -> bool:
    """Update one path from `old` to `new`; False (leaving the file alone) when it holds unsaved edits, or
    was written at all since the promotion noted it (a person restoring that very version is an answer too)."""
    on_disk = files.file_entry(path)
    if on_disk == new:
        files.track(path)
        return True
    if files.nested_repository(path) == path and (new is None or new.mode != GITLINK):
        # A repository of its own stands there (its .git may hold the only copy of its history): it stays,
        # as git leaves it ("unable to rmdir"), and a snapshot now would record it again, reverting the change.
        files.stage(path, new)
        return False
    if on_disk == old and files.index_entry(path) == old and files.stamp(path) == stamp:
        try:
            if new is None:
                files.remove(path)
            else:
                files.write(path, new)
            return True
        except OSError:
            pass  # something unexpected stands in the way (a non-empty directory, a file as a parent)
    files.stage(path, new)
    return False


def _resolved(files: WorktreeFiles, path: str, new: Entry | None) -> bool:
    if files.file_entry(path) == new:
        files.track(path)
        return True
    # Staging anything but the promoted version is the person's own answer (`git add` after merging).
    return files.index_entry(path) != new


def _files(ctx: Context, worktree: Path) -> WorktreeFiles:
    return ctx.store.worktree_files(worktree)


def _load(files: WorktreeFiles) -> dict:
    """The entries a promotion left. A record this git-lanes cannot read is an error, never "nothing left":
    read as empty, the paths a promotion still has to write would be dropped and a later snapshot could
    revert the promotion."""
    record = files.read_record(RECORD)
    if record is None:
        return {}
    where = f"{RECORD} in {files.git_dir}"
    if not isinstance(record, dict):
        raise UnsupportedFormat(f"{where} is not a JSON object", hint=f"move it aside only once the paths it "
                                                                      "names hold what the lane should")
    check_format(record, where, FORMAT)
    paths = record.get("paths") or {}
    if not isinstance(paths, dict):
        raise UnsupportedFormat(f"{where} is malformed: its paths are not an object")
    return dict(paths)


def _save(files: WorktreeFiles, entries: dict) -> None:
    files.write_record(RECORD, {"format": FORMAT, "paths": entries} if entries else None)


def _dump(entry: Entry | None) -> list | None:
    return None if entry is None else [entry.oid, entry.mode]


def _load_entry(data: list | None) -> Entry | None:
    return None if data is None else Entry(data[0], int(data[1]))
