"""Where board posts live in the ledger tree, and how the board's end is found without a counter record.

A post is `board/<aa>/<bb>/<cc>/<seq:08d>.json` (seq = aabbccdd): every tree on that path holds at most 100
entries, so an append rewrites a fixed few small trees however long the board grows. The board's end is the
largest path, found with four tree reads; each post carries the running count of broadcasts up to it."""

from __future__ import annotations

from git_lanes.domain import stored
from git_lanes.errors import MalformedRecord
from git_lanes.ledger import State, Tx

Reader = State | Tx
MAX_SEQ = 10**8 - 1
# Posts to everyone of these kinds count as unread and wake; system records (ticket_ready) never do.
AGENT_KINDS = ("note", "question", "handoff")


def post_path(seq: int) -> str:
    digits = f"{seq:08d}"
    return f"board/{digits[0:2]}/{digits[2:4]}/{digits[4:6]}/{digits}.json"


def get_post(state: Reader, seq: int, set_aside: stored.SetAside | None = None) -> dict | None:
    """Post `seq` (None when there is none). One that cannot be read is an error, or, given `set_aside`,
    noted there and None."""
    return stored.read_or_set_aside(state, post_path(seq), set_aside) if 0 < seq <= MAX_SEQ else None


def current_seq(state: Reader) -> int:
    """The last post's seq (0 for an empty board): the largest path, one tree read per level."""
    return _last(state, "board", 0)


def _last(state: Reader, directory: str, depth: int) -> int:
    names = state.names(directory)
    if depth == 3:
        files = [n for n in names if n.endswith(".json")]
        return int(max(files)[:-5]) if files else 0
    for level in sorted((n for n in names if len(n) == 2 and n.isdigit()), reverse=True):
        found = _last(state, f"{directory}/{level}", depth + 1)
        if found:
            return found
    return 0


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
