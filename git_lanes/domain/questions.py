"""The board's open questions: an index of the questions nobody answered or resolved yet, kept by the fold, so
every one of them can be shown however many posts came after it, at the cost of the index and their posts,
never of the board's length.

`questions/open.json` lists them by number (model OpenQuestions). It lies outside `board/`, as the retraction
list does: the board's end is still found from its posts alone, and a git-lanes from before it neither reads it
nor calls it malformed. Posts an index-aware git-lanes writes carry `indexed`: the fold of each such post first
looks back over the posts before it that do not (an older git-lanes wrote them, or the ledger predates the
index) and lists their open questions, so a post with `indexed` vouches for every post before it. A reader
does the same look back from the board's end, which costs nothing once the last post carries it: a ledger
written before the index shows its open questions from its first read, and is indexed by its next post.

What an older git-lanes did to a listed question since (resolved, retracted it) is read from the post itself:
a listed post is shown only while it is still open."""

from __future__ import annotations

from git_lanes.domain import stored
from git_lanes.domain.board_index import current_seq, get_post, post_path
from git_lanes.errors import MalformedRecord
from git_lanes.ledger import State, Tx

Reader = State | Tx
INDEX = "questions/open.json"


def is_open(post: dict) -> bool:
    """Whether `post` is a question still waiting for an answer (an undone one waits for nobody)."""
    return post.get("kind") == "question" and not post.get("resolved") and not post.get("retracted")


def listed(state: Reader, set_aside: stored.SetAside | None = None) -> set[int]:
    """The open questions the index lists (none before there is one). One that cannot be read (a peer's) is
    noted in `set_aside` and its questions are found by reading every post, as a ledger without `indexed`
    posts would need, so a broken index neither stops the board nor hides a question; the fold's next write
    of it writes a good one."""
    try:
        record = stored.read(state, INDEX)
    except MalformedRecord as exc:
        if set_aside is not None:
            stored.note(set_aside, INDEX, exc)
        return set(unindexed(state, current_seq(state), set_aside, whole=True))
    return set((record or {}).get("posts", ()))


def unindexed(state: Reader, end: int, set_aside: stored.SetAside | None = None, *, whole: bool = False) \
        -> list[int]:
    """The open questions among the posts through `end` that no index-aware post vouches for (all of them
    for `whole`): those after the last post that carries `indexed`, newest first. A post that cannot be read
    vouches for nothing and is no question: noted in `set_aside`, or passed over in the fold."""
    found = []
    seq = end
    while seq > 0:
        try:
            post = get_post(state, seq, set_aside) if set_aside is not None else stored.peek(state, post_path(seq))
        except MalformedRecord:
            post = None
        if post is not None and post.get("indexed") and not whole:
            break
        if post is not None and is_open(post):
            found.append(seq)
        seq -= 1
    return found


def open_posts(state: Reader, set_aside: stored.SetAside | None = None) -> list[dict]:
    """Every open question on the board, oldest first; those that cannot be read are left out (noted in
    `set_aside`)."""
    set_aside = [] if set_aside is None else set_aside
    seqs = listed(state, set_aside) | set(unindexed(state, current_seq(state), set_aside))
    posts = (get_post(state, seq, set_aside) for seq in sorted(seqs))
    return [post for post in posts if post is not None and is_open(post)]


def note_post(tx: Tx, seq: int, question: bool) -> None:
    """Keep the index in step with post `seq`, about to be written with `indexed` (a question when
    `question`): list it, and the open questions of the posts before it that no index-aware post vouched
    for. Usually that look back reads the one post before it, which the fold has just read."""
    missed = unindexed(tx, seq - 1)
    if question:
        missed.append(seq)
    if missed:
        _write(tx, _kept(tx)[0] | set(missed))


def note_closed(tx: Tx, seq: int) -> None:
    """Question `seq` was answered or resolved: it leaves the index."""
    seqs, broken = _kept(tx)
    if seq in seqs or broken:
        _write(tx, seqs - {seq})


def note_changes(tx: Tx, changes: list[tuple[dict | None, dict | None]]) -> None:
    """Keep the index in step with an undo (or redo) that rewrites posts, each from `before` to `after`: a
    question it opens again (an answer undone, a retracted question put back) joins it, one it closes leaves.
    Read and written once for all of them."""
    opened, closed = set(), set()
    for before, after in changes:
        now = after is not None and is_open(after)
        post = after or before
        if (before is not None and is_open(before)) != now and post is not None and isinstance(post.get("seq"), int):
            (opened if now else closed).add(post["seq"])
    if opened or closed:
        seqs, broken = _kept(tx)
        if opened - seqs or closed & seqs or broken:
            _write(tx, (seqs | opened) - closed)


def _kept(tx: Tx) -> tuple[set[int], bool]:
    """The index as the fold changes it, and whether a peer's broken one was read (rebuilt from the posts, to be
    written even if this op changes nothing in it)."""
    broken: stored.SetAside = []
    return listed(tx, broken), bool(broken)


def _write(tx: Tx, seqs: set[int]) -> None:
    if seqs:
        tx.put(INDEX, {"posts": sorted(seqs)})
    elif tx.peek(INDEX) is not None:  # (even a broken one: it goes)
        tx.delete(INDEX)

