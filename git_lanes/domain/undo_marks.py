"""The marks undos leave while they run (`.git/lanes-undo/`, one journal each, see store/journal.py): one
whose process is gone is an undo cut short, which the next `undo` finishes. Read by `status` and `doctor`
too, so this module loads nothing until a mark is there."""

from __future__ import annotations

import os

from git_lanes.domain.context import Context
from git_lanes.errors import command

FOLDER = "lanes-undo"
HINT = f"run {command('undo')} to finish it"  # each face names its own way to run it


def folder(ctx: Context) -> str:
    return os.path.join(str(ctx.store.common_dir), FOLDER)


def interrupted(ctx: Context) -> list[dict]:
    """Each undo cut short (its process killed after its mark was made, before it finished): the undo's
    operation id and the one it undoes where its mark says, what happened and what to run."""
    where = folder(ctx)
    try:
        if not os.listdir(where):
            return []
    except FileNotFoundError:
        return []
    from git_lanes.store import journal  # only with a mark there: `status` runs this every time

    found = []
    for records in journal.orphan_records(where):
        header = next((r for r in records if r.get("undoes")), {})
        undoes = header.get("undoes")
        of = f" of operation {str(undoes)[:8]}" if undoes else ""
        found.append({"undo": header.get("undo"), "undoes": undoes, "hint": HINT,
                      "message": f"an undo{of} was interrupted before it finished"})
    return found
