"""How a ledger commit holds the state after its op (DESIGN.md §2, as amended for issue 15).

A *checkpoint* commit's tree is the whole state after its op. Every other commit is a *delta*: its op's
JSON carries `"edits"`: each record path the op changed, with the record it wrote, or null where it deleted
one; its tree is the whole state too, for plain git, or its checkpoint's within a burst (ledger/log.py
`BURST`), and readers of ours never use it. The state after a delta commit is its
parent's state with those edits laid over it. A writer makes a checkpoint of the first op and of every
`CHECKPOINT_EVERY`-th after it, so any state is one tree plus the edits of at most `CHECKPOINT_EVERY - 1`
commits: reading cost stays flat however long the log grows, and an append in a burst writes one object,
the commit, instead of a blob per record and a tree per folder on its path.

A commit whose message holds no `edits` key (a checkpoint, every commit of an older git-lanes, a commit cut
short) is read by its tree, as before. Pure: the readers pass a function that reads one commit, so the
hook's object reader and both stores share it."""

from __future__ import annotations


from git_lanes.errors import UnsupportedFormat
from git_lanes.model import jsontext

TYPE_CHECKING = False  # the agent-hook path reads ledger state through this module; it never loads typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Record = dict[str, Any]
    # (tree, first parent or None, message) of one commit
    ReadCommit = Callable[[str], tuple[str, "str | None", str]]

CHECKPOINT_EVERY = 32
EDITS = "edits"


class Materialized:
    """The state after one ledger commit: `tree` (its last checkpoint's) with `overlay` laid over it (path ->
    record, None: deleted), `depth` delta commits since that checkpoint. Shared by every reader of that commit
    in this process, so nobody changes `overlay` or a record in it."""

    __slots__ = ("tree", "overlay", "depth")

    def __init__(self, tree: str | None, overlay: dict[str, Record | None], depth: int) -> None:
        self.tree = tree
        self.overlay = overlay
        self.depth = depth

    def then(self, edits: dict[str, Record | None]) -> Materialized:
        """The state after a delta commit on this one with `edits`."""
        return Materialized(self.tree, {**self.overlay, **edits} if self.overlay else dict(edits), self.depth + 1)


EMPTY = Materialized(None, {}, 0)

# Commit -> its state, for a process that reads the ledger again and again (a held-open API, a writer taking
# its own last commit as the next base). A commit's state never changes, so an entry is never stale.
_KNOWN: dict[str, Materialized] = {}
_KNOWN_MAX = 64


def remember(commit: str, state: Materialized) -> None:
    if len(_KNOWN) >= _KNOWN_MAX:
        # `git lanes serve` and `git lanes mcp` read and write on threads of their own, which may evict the
        # same entries at once: one already gone is no error (a `del` failed their op with a KeyError).
        for old in list(_KNOWN)[:_KNOWN_MAX // 2]:
            _KNOWN.pop(old, None)
    _KNOWN[commit] = state


def materialize(commit: str | None, read: ReadCommit) -> Materialized:
    """The state after ledger commit `commit` (None: the empty ledger), reading back to the nearest checkpoint
    or the nearest commit this process knows."""
    if commit is None:
        return EMPTY
    known = _KNOWN.get(commit)
    if known is not None:
        return known
    chain: list[dict[str, Record | None]] = []
    at = commit
    while True:
        known = _KNOWN.get(at)
        if known is not None:
            base = known
            break
        tree, parent, message = read(at)
        edits = edits_of(message, at)
        if edits is None:
            base = Materialized(tree, {}, 0)
            break
        if parent is None:
            # No git-lanes writes a delta without a parent (the first op is a checkpoint): its parent is cut
            # off. Laid over the empty state, it read as a ledger that lost every record written before it,
            # and the next append checkpointed that loss and synced it to everyone.
            raise UnsupportedFormat(f"ledger commit {at[:8]} holds an op's edits, but not the commit they "
                                    "apply to: a shallow fetch cut the ledger's history, or a peer wrote it",
                                    hint="fetch the ledger whole: `git fetch --unshallow`, or fetch "
                                    "refs/lanes/ledger without --depth")
        chain.append(edits)
        at = parent
    if chain:
        # One dict for the whole chain: a `then` per commit copies the overlay each time, quadratic in a chain
        # a peer made long (30,000 deltas without a checkpoint took 12 s a read, and the hook reads per call).
        overlay = dict(base.overlay)
        for edits in reversed(chain):
            overlay.update(edits)
        base = Materialized(base.tree, overlay, base.depth + len(chain))
    remember(commit, base)
    return base


def edits_of(message: str, commit: str) -> dict[str, Record | None] | None:
    """The edits a delta commit carries: the JSON object `{"edits": ...}` on the line after its op's JSON line
    (apart, so what reads only the op, as a sync's op log does for thousands of commits, never parses the
    records); None for a commit with no such line, read by its tree. Raises UnsupportedFormat for a line there
    that is not edits, or edits no git-lanes writes (a path that is not a record path): what state they
    meant is unknowable."""
    _, sep, body = message.partition("\n\n")
    rest = body.partition("\n")[2]
    if not sep or not rest.strip():
        return None
    try:
        data = jsontext.loads(rest)
    except (ValueError, RecursionError):
        data = None
    edits = data.get(EDITS) if isinstance(data, dict) and len(data) == 1 else None
    if not isinstance(edits, dict):
        raise UnsupportedFormat(f"ledger commit {commit[:8]} holds a line after its op that is not its edits",
                                hint=_peer_hint(commit))
    if not all(_record_path(path) for path in edits):
        raise UnsupportedFormat(f"ledger commit {commit[:8]} holds edits that are not record paths",
                                hint=_peer_hint(commit))
    return edits


def _peer_hint(commit: str) -> str:
    # What to do, not where else it is reported: doctor prints this hint itself.
    return (f"a newer git-lanes or a damaged peer wrote it: upgrade git-lanes on every machine; `git show "
            f"{commit[:8]}` shows the op and who made it, for them to repair the ledger they push")


def _record_path(path: object) -> bool:
    """Whether `path` is a record path as git-lanes writes them: folders, then a name ending in `.json`, no
    folder ending in `.json` (agent ids may not: model/ids.py) nor starting with a dot. So no record path is
    another's folder: edits could not make a path a record in one commit and a folder in the next, which
    readers would see one way and the next checkpoint's tree (where a record replaces a folder, records and
    all) another. And no `.git` folder, which git refuses to check out and fsck flags in the checkpoint."""
    if not isinstance(path, str) or "\0" in path:
        return False
    *folders, name = path.split("/")
    return name.endswith(".json") \
        and all(part and not part.startswith(".") and not part.endswith(".json") for part in folders)


def overlaid_names(names: dict[str, bool], overlay: dict[str, Record | None], directory: str,
                   holds_files: Callable[[str], bool]) -> dict[str, bool]:
    """The entries of `directory` (name -> is a folder) once `overlay` is laid over `names`, the entries the
    tree holds there. A folder whose every record the overlay deleted is gone, as in git, which
    `holds_files(folder path)` decides."""
    prefix = f"{directory}/" if directory else ""
    found = dict(names)
    emptied: set[str] = set()
    for path, record in overlay.items():
        if not path.startswith(prefix):
            continue
        child, nested, _ = path[len(prefix):].partition("/")
        if record is not None:
            found[child] = bool(nested)
        elif not nested:
            found.pop(child, None)
        else:
            emptied.add(child)
    for child in emptied:
        if found.get(child) and not holds_files(prefix + child):
            del found[child]
    return found
