"""The marks undos leave while they run (`.git/lanes-undo/`, one journal each, see store/journal.py): one
whose process is gone is an undo cut short, which the next `undo` finishes. Read by `status` and `doctor`
too, so this module loads nothing until a mark is there.

An undo cut short after its refs moved is finished by bringing its workspaces along. One cut short before
any ref moved did nothing yet: finishing it is undoing the operation it was asked to undo, which the next
`undo` given no operation does (`waiting`), rather than undoing the newest operation."""

from __future__ import annotations

import os

from git_lanes.domain.context import Context
from git_lanes.errors import LanesError, command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from git_lanes.model.oplog import OpEntry

FOLDER = "lanes-undo"
LOOK = 500  # how far back in the operation log `undo OP` finds an operation (api/oplog.py's WINDOW)
HINT = f"run {command('undo')} to finish it"  # each face names its own way to run it


def folder(ctx: Context) -> str:
    return os.path.join(str(ctx.store.common_dir), FOLDER)


def interrupted(ctx: Context) -> list[dict]:
    """Each undo cut short (its process killed after its mark was made, before it finished): the undo's
    operation id and the one it undoes where its mark says, whether it had started moving refs, what happened
    and what to run."""
    found_headers = headers(ctx)
    if not found_headers:
        return []
    from git_lanes.domain import oplog

    try:
        unmoved = {id(h) for h in waiting(ctx, found_headers, oplog.entries(ctx, LOOK, told=False))}
    except LanesError:  # a log that cannot be read: whether its refs moved cannot be told, so say they may have
        unmoved = set()
    found = []
    for header in found_headers:
        undoes = header.get("undoes")
        of = f" of operation {str(undoes)[:8]}" if undoes else ""
        if id(header) in unmoved:
            found.append({"undo": header.get("undo"), "undoes": undoes, "started": False,
                          "hint": f"{HINT} (it undoes {str(undoes)[:8]}, as was asked)",
                          "message": f"an undo{of} was interrupted before it moved anything"})
        else:
            found.append({"undo": header.get("undo"), "undoes": undoes, "started": True, "hint": HINT,
                          "message": f"an undo{of} was interrupted before it finished"})
    return found


def headers(ctx: Context) -> list[dict]:
    """What each mark of an undo cut short says first (its own id, the operation it undoes, when), a look
    taking no lock for longer than the read."""
    where = folder(ctx)
    try:
        if not os.listdir(where):
            return []
    except FileNotFoundError:
        return []
    from git_lanes.store import journal  # only with a mark there: `status` runs this every time

    return [next((r for r in records if r.get("undoes")), {}) for records in journal.orphan_records(where)]


def waiting(ctx: Context, marks: list[dict], entries: Iterable[OpEntry]) -> list[dict]:
    """Of `marks` (`headers`), those of undos cut short before they moved any ref, newest first: the undo is
    not in the operation log (`entries`, newest first, read only as far as the operations the marks name) nor
    waiting there in a killed process's journal, and the operation it undoes is in the log, not undone since.
    Each is an undo that was asked for and has not happened yet."""
    from git_lanes.domain import oplog

    targets = {m.get("undoes") for m in marks if m.get("undoes")}
    seen: list[OpEntry] = []
    for entry in entries:
        if not targets:
            break
        seen.append(entry)
        targets.discard(entry.id)
    at = {entry.id: index for index, entry in enumerate(seen)}
    found = []
    for mark in marks:
        target, undo = mark.get("undoes"), mark.get("undo")
        if target not in at or not undo or undo in at:
            continue  # an operation past the log's window, or an undo that moved refs (its entry is logged)
        if os.path.exists(os.path.join(oplog.journal_folder(ctx), str(undo))):
            continue  # about to move refs when it died, or moved them: the next writer logs what took effect
        if oplog.active_undo(target, seen[:at[target]]) is None:
            found.append(mark)
    return sorted(found, key=lambda m: float(m.get("time") or 0), reverse=True)
