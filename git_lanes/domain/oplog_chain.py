"""Where the operation log's chain of commits breaks, and `doctor --fix`'s ending of the log there
(domain/oplog.py records and reads the log; api/health.py checks it). A commit of the log lost from the object
database (by hand, or by a copy of the git directory that left objects out), or the ref set to a blob or a
tree, leaves every entry below it out of undo's reach: what is lost cannot come back, so readers stop at the
break and `restart` ends the log there, keeping every entry still readable. One walk serves all three, so
they agree on where the log breaks."""

from __future__ import annotations

from git_lanes.domain.context import Context
from git_lanes.errors import command
from git_lanes.model import refs
from git_lanes.model.oplog import OpEntry
from git_lanes.store import RefUpdate
from git_lanes.store.values import CorruptObject

TYPE_CHECKING = False  # not `from typing import …`, as in domain/oplog.py
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from git_lanes.store.values import CommitInfo

    # (the entry above the break or None for the ref itself, the commit that cannot be read, its kind (None:
    # not in the repository), how many entries came before it)
    Broke = Callable[[str | None, str, str | None, int], None]

# The kind `broke(…)` is told of a commit whose file is here but cannot be read (store.values.CorruptObject)
CORRUPT = "damaged commit"

BROKEN_HINT = (f"{command('doctor', check='oplog', fix=True)} keeps what of it is still in the repository; else the "
               "next operation starts the log afresh, and undo cannot reach the operations it held")


def unreadable(oid: str | None, kind: str | None) -> str:
    """What an operation log commit that cannot be read is, in a message."""
    if kind == CORRUPT:
        return f"commit {(oid or '')[:8]}, which is damaged (`git fsck` names it; a copy from another clone mends it)"
    return f"commit {(oid or '')[:8]}, which is not in the repository" if kind is None else f"a {kind}"


def commits(ctx: Context, commit: str | None, limit: int | None, broke: Broke) -> Iterator[tuple[str, CommitInfo]]:
    """The log's commits from `commit` down, first parent by first parent, each with what it holds; where the
    next cannot be read (lost from the object database, or not a commit), `broke(…)` and stop."""
    store = ctx.store
    child, count = None, 0
    while commit is not None and (limit is None or count < limit):
        try:
            info = store.commit_info(commit)
        except CorruptObject:
            broke(child, commit, CORRUPT, count)
            return
        except (KeyError, ValueError):
            kind = store.object_kind(commit)
            if kind == "commit":
                raise
            broke(child, commit, kind, count)
            return
        yield commit, info
        count += 1
        commit, child = (info.parents[0] if info.parents else None), commit


def _readable(ctx: Context, oid: str) -> bool:
    """Whether `oid` is a commit that can be read (neither lost, another kind, nor damaged)."""
    if ctx.store.object_kind(oid) != "commit":
        return False
    try:
        ctx.store.commit_info(oid)
    except CorruptObject:
        return False
    return True


def restart(ctx: Context) -> int:
    """End the log where its chain breaks, keeping every entry still readable: from its head down to the
    break or, when the head itself is lost, from the newest earlier head its reflog names that is still here
    (what lies between is what was lost). An intact chain from there is the log again as it is; a broken one
    is written again as a chain of its own, ending at the break. Nothing readable: the ref goes. The ref
    moves by compare-and-swap from the broken head. Returns how many entries the log keeps."""
    from git_lanes.store import reflogs

    store = ctx.store
    with store.locked():
        head = store.read_ref(refs.OPLOG)
        heads = ([head] if head else []) + reflogs.values(store.common_dir, refs.OPLOG)
        start = next((oid for oid in heads if _readable(ctx, oid)), None)
        broken: list[str] = []
        kept = [OpEntry.from_message(info.message, commit) for commit, info in
                commits(ctx, start, None, lambda child, commit, kind, count: broken.append(commit))]
        new = start
        if broken:
            new = None
            for entry in reversed(kept):
                new = store.write_commit(store.empty_tree(), [new] if new else [], entry.message())
        if new != head:
            store.update_refs([RefUpdate(refs.OPLOG, new, head,
                                         f"lanes oplog: restarted, {len(kept)} readable entries kept")])
    return len(kept)
