"""Where board posts live in the ledger tree, and how the board's end is found without a counter record.

A post is `board/<aa>/<bb>/<cc>/<seq:08d>.json` (seq = aabbccdd): every tree on that path holds at most 100
entries, so an append rewrites a fixed few small trees however long the board grows. The board's end is the
largest path: the checkpoint tree's, found with four tree reads and remembered per tree, or a post written
since, when posts are all that was written over it; each post carries the running count of broadcasts up
to it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from git_lanes.domain import stored
from git_lanes.errors import MalformedRecord
from git_lanes.ledger import State, Tx

if TYPE_CHECKING:
    from git_lanes.ledger.state import Record

Reader = State | Tx
MAX_SEQ = 10**8 - 1
# Posts to everyone of these kinds count as unread and wake; system records (ticket_ready) never do.
AGENT_KINDS = ("note", "question", "handoff")
# The op that lists (or unlists) at once the posts an undo's inverse ops retracted (board.relist), named by
# number: a sync's replay renumbers them with the posts (sync_ledger.py).
RETRACTIONS = "board.retractions"


def post_path(seq: int) -> str:
    digits = f"{seq:08d}"
    return f"board/{digits[0:2]}/{digits[2:4]}/{digits[4:6]}/{digits}.json"


def get_post(state: Reader, seq: int, set_aside: stored.SetAside | None = None) -> dict | None:
    """Post `seq` (None when there is none). One that cannot be read is an error, or, given `set_aside`,
    noted there and None."""
    return stored.read_or_set_aside(state, post_path(seq), set_aside) if 0 < seq <= MAX_SEQ else None


def current_seq(state: Reader) -> int:
    """The last post's seq (0 for an empty board): the largest path."""
    key = _last_key(state)
    return int(key[3][:-5]) if key else 0


# A board path's place in the order that finds the board's end: its three folders and its file name.
Key = tuple[str, ...]
# A post's path as `post_path` writes it; any other edit under `board/` but a read position sends the search
# back to listing the folders.
_POST = re.compile(r"board/([0-9]{2})/([0-9]{2})/([0-9]{2})/([0-9]{8}\.json)")
# Checkpoint tree -> its largest board key: a tree never changes, so every op until the next checkpoint (32
# ops) reads its board's end from here and lists no folder.
_TREE_LAST: dict[str, Key | None] = {}
_TREE_LAST_MAX = 64


def _last_key(state: Reader) -> Key | None:
    """The largest board key of `state`: the tree's (remembered per tree) and the posts written over it,
    when all that was written over it is posts and read positions; else found by listing, as in a tree."""
    if isinstance(state, Tx):
        added = _posts_written(state.edits)
        if added is None:
            return _listed(state.names)
        return max((k for k in (_last_key(state.base), *added) if k), default=None)
    memo = state.memo
    if "board_last" not in memo:
        added = _posts_written(state.at.overlay)
        memo["board_last"] = _listed(state.names) if added is None else \
            max((k for k in (_tree_last(state), *added) if k), default=None)
    key: Key | None = memo["board_last"]
    return key


def _posts_written(edits: dict[str, Record | None]) -> list[Key] | None:
    """The keys of the posts `edits` wrote; None when they did anything else to the board's folders (deleted a
    post, wrote another path), which only a listing can weigh."""
    keys = []
    for path, record in edits.items():
        if not path.startswith("board") or path.startswith("board/readers/"):
            continue
        key = _KEYS.get(path)
        if key is None:
            key = _post_key(path)
        if not key or record is None:
            return None
        keys.append(key)
    return keys


# Board path -> its key, () for a path that is no post's: a function of the path alone, kept because every op
# looks again at the paths of the overlay it reads (the edits of up to CHECKPOINT_EVERY ops).
_KEYS: dict[str, Key] = {}
_KEYS_MAX = 4096


def _post_key(path: str) -> Key:
    match = _POST.fullmatch(path)
    key: Key = match.groups() if match else ()
    if len(_KEYS) >= _KEYS_MAX:
        _KEYS.clear()
    _KEYS[path] = key
    return key


def _tree_last(state: State) -> Key | None:
    if state.tree is None:
        return None
    if state.tree not in _TREE_LAST:
        if len(_TREE_LAST) >= _TREE_LAST_MAX:
            for old in list(_TREE_LAST)[:_TREE_LAST_MAX // 2]:
                _TREE_LAST.pop(old, None)  # another thread may have evicted it: no error
        _TREE_LAST[state.tree] = _listed(state.tree_names)
    return _TREE_LAST[state.tree]


def _listed(names: Callable[[str], list[str]], directory: str = "board", found: Key = ()) -> Key | None:
    """The largest key, one listing per level: the last file in the last folder (of two-digit names, three
    deep) that holds any."""
    entries = names(directory)
    if len(found) == 3:
        files = [n for n in entries if n.endswith(".json")]
        return (*found, max(files)) if files else None
    for level in sorted((n for n in entries if len(n) == 2 and n.isdigit()), reverse=True):
        key = _listed(names, f"{directory}/{level}", (*found, level))
        if key:
            return key
    return None


def broadcasts_through(state: Reader, seq: int) -> int:
    """How many counted broadcasts (posts to everyone that wake) the board held after post `seq`. A post that
    cannot be read (a peer's) holds no count: the last readable one before it gives it, so one bad post
    neither stops the board nor its counts."""
    while 0 < seq <= MAX_SEQ:
        try:
            return int((stored.peek(state, post_path(seq)) or {}).get("broadcasts", 0))
        except MalformedRecord:
            seq -= 1
    return 0
