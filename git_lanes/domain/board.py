"""The board: posts in one total order (their sequence number is their id), a read cursor per agent for
posts to everyone, and an inbox per agent for posts directed to it, so a post sent before an agent's first
call still reaches it while old broadcasts do not flood in. Reading marks read.

Counting what is unread costs O(1), whatever the board's length: each post carries the running count of
broadcasts, and a reader keeps its cursor and the count of its own broadcasts since, so unread = broadcasts
after the cursor minus its own. Listing them scans only what lies after the
cursor, and reading moves the cursor past it."""

from __future__ import annotations

from git_lanes.domain import questions, stored
from git_lanes.domain.agents import Reader, agent_path, reader_path, touch, validate_agent_id
from git_lanes.domain.board_index import (AGENT_KINDS, MAX_SEQ, broadcasts_through, current_seq, get_post,
                                         post_path)
from git_lanes.errors import Ambiguous, NotFound, Refused, StaleState, UserError, command
from git_lanes.ledger import Op, Tx
from git_lanes.model.text import check_text

# Records of what the system did: shown on the board, never counted unread, never a wake.
SYSTEM_KINDS = ("ticket_ready", "pr_opened", "pr_updated", "branch_published", "pr_merged", "branch_merged")
MAX_TEXT = 16 * 1024
# A reader lists its last OWN_LISTED own broadcasts since its cursor (`own`) and only counts the ones before
# them (`own_before`). Every broadcast rewrites its sender's read position, which rides in the op's commit:
# with the whole list, an agent that posts while others post and never reads paid for all it had posted at
# every post, and so did everyone who read that commit (a list of hundreds in each of its deltas).
OWN_LISTED = 16
# `board read` looks this far back for recent posts an agent may see, so its cost stays bounded.
RECENT_SCAN = 2000
# The retracted posts that count for someone (model RetractedPosts). Outside `board/`: the board's end is
# still found from its posts alone, and a git-lanes from before it neither reads it nor calls it malformed.
RETRACTED = "retracted/board.json"
# A post number has at most this many digits, so a longer run of digits can only begin an id.
NUMBER_DIGITS = len(str(MAX_SEQ))
POSTS_HINT = f"see {command('board read', all=True, json=True)} for each post's id"


def reader_of(state: Reader, agent: str, set_aside: stored.SetAside | None = None) -> dict:
    """`agent`'s place on the board. One that cannot be read (a peer's) reads as a new reader's, noted in
    `set_aside`: its cursor is derived from reading, and the next read writes a good one."""
    found = stored.read_or_set_aside(state, reader_path(agent), [] if set_aside is None else set_aside)
    return found or {"agent": agent, "cursor": None, "inbox": [], "own": []}


def add_post(tx: Tx, op: Op, sender: str, kind: str, text: str, to: str | None) -> int:
    seq = current_seq(tx) + 1
    if seq > MAX_SEQ:
        raise Refused("the board is full", code="board_full")
    counted = to is None and kind in AGENT_KINDS
    before = broadcasts_through(tx, seq - 1)
    questions.note_post(tx, seq, kind == "question")
    tx.put(post_path(seq), {"seq": seq, "id": op.id, "from": sender, "to": to, "kind": kind, "text": text,
                            "time": op.time, "resolved": None, "broadcasts": before + (1 if counted else 0),
                            "indexed": True})
    if to is not None:
        reader = reader_of(tx, to)
        reader["inbox"] = reader["inbox"] + [seq]
        tx.put(reader_path(to), reader)
    if counted:
        _note_own_broadcast(tx, sender, seq, before)
    return seq


def _note_own_broadcast(tx: Tx, sender: str, seq: int, before: int) -> None:
    """A sender's own broadcast is never unread for it. With nothing else unread its cursor simply moves
    past it; otherwise it is counted as its own (`own`, `own_before`). `before` is the count of broadcasts
    through the post before it, which the caller just read."""
    reader = reader_of(tx, sender)
    if reader.get("cursor") is None:
        return
    counted = _counted(tx, reader, seq - 1)
    if _unread(tx, reader, seq - 1, before, counted) == 0:
        reader.update(cursor=seq, own=[])
        counted = 0
    else:
        own = reader.get("own", []) + [seq]
        if len(own) > OWN_LISTED:
            counted += len(own) - OWN_LISTED
            own = own[-OWN_LISTED:]
        reader["own"] = own
    _keep_counted(reader, counted)
    tx.put(reader_path(sender), reader)


def validate_text(text: object) -> str:
    """A post's text: text, not blank, no control characters, at most MAX_TEXT bytes."""
    return _valid_text(text, "the post's text", "the post", "post",
                       hint="post a summary and point to a file in your lane")


def validate_message(text: object) -> str:
    """What `tell` queues for a run's model, held to a post's rules and named as what it is."""
    return _valid_text(text, "the message", "the message", "message",
                       hint="send a summary and point to a file in the lane")


def _valid_text(text: object, what: str, whole: str, kind: str, *, hint: str) -> str:
    if not isinstance(text, str):
        raise UserError(f"{what} must be text, not {type(text).__name__}", code="invalid_text")
    if not text.strip():
        raise UserError(f"{what} must not be empty", code=f"empty_{kind}")
    check_text(text, what, code="invalid_text", multiline=True)
    if len(text.encode()) > MAX_TEXT:
        raise UserError(f"{whole} is {len(text.encode())} bytes; the limit is {MAX_TEXT}", code=f"{kind}_too_large",
                        hint=hint)
    return text


def validate_kind(kind: object) -> str:
    """What a face's caller asked to post (None: a note). The fold takes a missing kind as a note too, as
    ops an older git-lanes appended may hold; an empty or unknown one is refused before any op is made."""
    if kind is None:
        return "note"
    if not isinstance(kind, str) or kind not in AGENT_KINDS:
        raise UserError(f"unknown post kind {kind!r}; use one of {', '.join(AGENT_KINDS)}", code="invalid_kind")
    return kind


def post(tx: Tx, op: Op) -> dict:
    sender = validate_agent_id(op.actor)
    kind = op.args.get("kind") or "note"
    if kind not in AGENT_KINDS:
        raise UserError(f"unknown post kind {kind!r}; use one of {', '.join(AGENT_KINDS)}", code="invalid_kind")
    to = op.args.get("to")
    if to is not None:
        validate_agent_id(to)
        if to == sender:
            raise UserError("a post to yourself reaches nobody", code="post_to_self")
    text = validate_text(op.args.get("text"))
    # A post to an agent that has not started yet waits for it, which is right for a handoff and silent
    # about a mistyped name; saying so lets the sender tell which.
    known = to is None or tx.get(agent_path(to)) is not None or reader_of(tx, to)["cursor"] is not None
    touch(tx, sender, op.time, extend=False)
    seq = add_post(tx, op, sender, kind, text, to)
    return {"post": seq, "kind": kind, "to": to} | ({"to_known": known} if to is not None else {})


def mark_read(tx: Tx, agent: str, through: int) -> int:
    reader = reader_of(tx, agent)
    was = int(reader.get("cursor") or 0)
    cursor = max(was, min(int(through), current_seq(tx)))
    own = reader.get("own", [])
    counted = _counted(tx, reader)
    if counted and own and cursor >= own[0]:
        counted = 0  # the cursor passed the oldest one listed, so every one counted before it too
    elif counted:
        # The cursor stops among the ones only counted (rare: a partial read by an agent with more than
        # OWN_LISTED broadcasts since its cursor): take off those it passed, or count again those still
        # after it, whichever scans fewer posts. An agent that posts on and on and reads the one early post
        # of another's passes a few; one that reads up to its listed ones leaves a few.
        below = own[0] if own else current_seq(tx) + 1
        if cursor - was < below - cursor:
            counted = max(0, counted - _own_broadcasts(tx, agent, was, cursor + 1))
        else:
            counted = _own_broadcasts(tx, agent, cursor, below)
    reader.update(cursor=cursor, inbox=[seq for seq in reader["inbox"] if seq > through],
                  own=[seq for seq in own if seq > cursor])
    _keep_counted(reader, counted)
    tx.put(reader_path(agent), reader)
    return cursor


def _counted(state: Reader, reader: dict, end: int | None = None) -> int:
    """How many of `reader`'s own broadcasts lie after its cursor and before its oldest listed one. The count
    (`own_before`) holds at the cursor it was taken at (`own_at`): a git-lanes from before the count moves
    the cursor and keeps the count as it was, which would hide as many posts from others, so a count taken
    at another cursor is taken again from the posts (through seq `end`, by default the board's last)."""
    counted = int(reader.get("own_before") or 0)
    cursor = reader.get("cursor")
    if counted and cursor is not None and reader.get("own_at", cursor) != cursor:
        own = reader.get("own", [])
        below = own[0] if own else (current_seq(state) if end is None else end) + 1
        counted = _own_broadcasts(state, reader["agent"], int(cursor), below)
    return counted


def _keep_counted(reader: dict, counted: int) -> None:
    """Write `counted` into `reader` as taken at its cursor (none: no key, as a reader that never counted)."""
    if counted:
        reader.update(own_before=counted, own_at=reader["cursor"])
    else:
        reader.pop("own_before", None)
        reader.pop("own_at", None)


def _own_broadcasts(state: Reader, agent: str, after: int, below: int) -> int:
    """How many of `agent`'s posts after seq `after` and before `below` count as broadcasts."""
    found = 0
    for seq in range(after + 1, below):
        record = get_post(state, seq, [])  # one a peer broke is not this agent's to count
        if record and record["from"] == agent and record["to"] is None and record["kind"] in AGENT_KINDS:
            found += 1
    return found


def read(tx: Tx, op: Op) -> dict:
    agent = validate_agent_id(op.args.get("agent"))
    through = op.args.get("through")
    if not isinstance(through, int) or through < 0:
        raise UserError(f"invalid read position {through!r}", code="invalid_post")
    touch(tx, agent, op.time, extend=False)
    return {"agent": agent, "cursor": mark_read(tx, agent, through)}


def post_number(state: Reader, given: object) -> int:
    """The number of the post `given` names, as every face takes one: its number as the board shows it (12,
    "12" or "#12"), or a unique prefix of its id as `--json` gives it. Up to NUMBER_DIGITS digits are a
    number, since no prefix that short could be told from one. Whether the number names a post is the fold's
    to say; an id is looked for among all posts, and a prefix that matches more than one is refused."""
    if isinstance(given, int) and not isinstance(given, bool):
        return given
    from git_lanes.model.names import id_text, shown_id  # only a post named by text needs it: `board read` loads none

    text = id_text(given, "post").strip()
    number = text[1:] if text.startswith("#") else text
    if number.isascii() and number.isdigit() and len(number) <= NUMBER_DIGITS:
        return int(number)
    prefix = text.lower()
    if not prefix or not prefix.isascii() or prefix.strip("0123456789abcdef"):
        raise NotFound(f"no post matches {shown_id(text)}", code="unknown_post", hint=POSTS_HINT)
    found = [(post["id"], post["seq"]) for post in _every_post(state)
             if isinstance(post.get("id"), str) and post["id"].startswith(prefix)]
    if not found:
        raise NotFound(f"no post matches {shown_id(text)}", code="unknown_post", hint=POSTS_HINT)
    if len(found) > 1:
        # one op may make several posts (a ticket_ready for each ticket), so even a whole id can name two
        shown = ", ".join(f"{post_id} (#{seq})" for post_id, seq in found[:10])
        raise Ambiguous(f"post id {shown_id(text)} is ambiguous: {shown}",
                        details={"candidates": [seq for _, seq in found]},
                        hint="give more characters of the id, or the post's number")
    return found[0][1]


def _every_post(state: Reader) -> list[dict]:
    """Every post that can be read, oldest first: one read per post, as there is no index by id."""
    posts = (get_post(state, seq, []) for seq in range(1, current_seq(state) + 1))
    return [post for post in posts if post is not None]


def _to_settle(tx: Tx, seq: object, *, question: bool = False) -> dict:
    """Post #seq as resolving it (or, with `question`, answering it) needs it: there, a question if it is to
    be answered, not withdrawn by an undo, and not resolved yet. A withdrawn post is shown to nobody: an
    answer to it would reach its sender about a post it took back."""
    record = stored.read(tx, post_path(seq)) if isinstance(seq, int) and 0 < seq <= MAX_SEQ else None
    if record is None:
        raise NotFound(f"no post #{seq}", code="unknown_post", hint=f"see {command('board read', all=True)}")
    if question and record.get("kind") != "question":
        # Answering resolves the post as a question answered, and its asker would find an "answer" to a note.
        raise Refused(f"post #{seq} is a {record.get('kind')}, not a question: only a question is answered",
                      code="not_a_question", details={"post": seq, "kind": record.get("kind")},
                      hint=f"reply with {command('board post', 'TEXT', to=record['from'])}"
                           if record.get("kind") in AGENT_KINDS else
                           f"see {command('board read', unanswered=True)} for the open questions")
    if record.get("retracted"):
        # taken back since: past the state the request needs, as a resolved post is
        raise StaleState(f"post #{seq} was withdrawn: {record['retracted'].get('by')} undid it",
                         code="post_retracted", details={"post": seq},
                         hint=f"see {command('board read', unanswered=True)} for the open questions")
    if record.get("resolved"):
        # like a task already done: someone else got there first, a lost race rather than bad input
        raise StaleState(f"post #{seq} was already resolved by {record['resolved']['by']}", code="already_resolved")
    return record


def resolve(tx: Tx, op: Op) -> dict:
    seq = op.args.get("post")
    record = _to_settle(tx, seq)
    record["resolved"] = {"by": op.actor, "time": op.time}
    tx.put(post_path(seq), record)
    questions.note_closed(tx, seq)
    return {"post": seq, "resolved_by": op.actor}




def answer(tx: Tx, op: Op) -> dict:
    """Answer question #post: a post to its asker that names the question, and the question resolved, in one
    op, so nobody sees the answer without the question being settled or the other way round. A post of
    another kind (a note, a handoff, a record of the system's) is no question and is refused
    (`not_a_question`), by every face alike: a reply to it is a post, and `board resolve` settles it."""
    seq = op.args.get("post")
    question = _to_settle(tx, seq, question=True)
    sender = validate_agent_id(op.actor)
    text = validate_text(op.args.get("text"))
    to = question["from"] if question["from"] != sender else None
    touch(tx, sender, op.time, extend=False)
    reply = add_post(tx, op, sender, "note", text, to)
    tx.put(post_path(reply), {**tx.get(post_path(reply)), "reply_to": seq})
    question["resolved"] = {"by": sender, "time": op.time, "answer": reply}
    tx.put(post_path(seq), question)
    questions.note_closed(tx, seq)
    return {"post": reply, "answers": seq, "to": to, "resolved_by": sender}


def note_retractions(tx: Tx, changes: list[tuple[dict | None, dict | None]]) -> None:
    """Keep `RETRACTED` in step with an undo that rewrites posts, each from `before` to `after`: a post it
    retracts joins the list when it counted for someone, one it puts back (a redo) leaves it. The list is read
    and written once for all of them: an undo that retracts a thousand posts rewrote it a thousand times."""
    flipped = [post for post in (_flipped(before, after) for before, after in changes) if post is not None]
    if flipped:
        _relist(tx, flipped)


def relist(tx: Tx, op: Op) -> dict:
    """The fold of `board.retractions`: list or unlist posts `posts` (seqs) as each one's record now says. An
    undo of many ops appends it after their inverse ops (which leave the list alone, `list_later`), so the
    list is rewritten once rather than once per post; decided from the posts as they are when it applies, so
    an inverse op a sync refused leaves its post as it is here too."""
    seqs = op.args.get("posts")
    if not isinstance(seqs, list) or not all(isinstance(seq, int) and not isinstance(seq, bool) for seq in seqs):
        raise UserError("a retraction list names posts by number", code="invalid_retractions")
    set_aside: stored.SetAside = []  # a post that cannot be read is left as listed
    posts = [post for post in (get_post(tx, seq, set_aside) for seq in dict.fromkeys(seqs))
             if post is not None and _counts(post)]
    _relist(tx, posts)
    return {"posts": len(seqs)}


def retraction_flips(before: dict | None, after: dict | None) -> bool:
    """Whether rewriting a post from `before` to `after` takes it onto or off `RETRACTED`."""
    return _flipped(before, after) is not None


def _flipped(before: dict | None, after: dict | None) -> dict | None:
    post = after or before
    if post is None or bool((before or {}).get("retracted")) == bool((after or {}).get("retracted")) or \
            not _counts(post):
        return None
    return post if after is not None else {**post, "retracted": None}


def _counts(post: dict) -> bool:
    return post.get("to") is not None or post.get("kind") in AGENT_KINDS


def _relist(tx: Tx, posts: list[dict]) -> None:
    """Set each of `posts` on or off `RETRACTED` as its own `retracted` says, in one read and one write."""
    seqs = {post["seq"] for post in posts}
    listed = [p for p in _retracted(tx) if p["seq"] not in seqs]
    added = [{"seq": post["seq"], "from": post["from"], "to": post.get("to")} for post in posts
             if post.get("retracted")]
    if added:
        listed = sorted([*listed, *added], key=lambda p: int(p["seq"]))
    if listed:
        tx.put(RETRACTED, {"posts": listed})
    elif tx.get(RETRACTED) is not None:
        tx.delete(RETRACTED)


def _retracted(state: Reader) -> list[dict]:
    """The retracted posts that counted for someone, oldest first; none when the list cannot be read (a
    peer's), so counts are then what they were before any undo."""
    return list((stored.read_or_set_aside(state, RETRACTED, []) or {}).get("posts", []))


def unread_broadcasts(state: Reader, agent: str, retracted: list[dict] | None = None) -> int:
    """How many posts to everyone from others lie after `agent`'s cursor, leaving out those retracted."""
    reader = reader_of(state, agent)
    cursor = reader.get("cursor")
    if cursor is None:
        return 0
    end = current_seq(state)
    gone = 0
    for post in reversed(_retracted(state) if retracted is None else retracted):
        if post["seq"] <= cursor:
            break
        gone += post["to"] is None and post["from"] != agent
    return max(0, _unread(state, reader, end, broadcasts_through(state, end)) - gone)


def _unread(state: Reader, reader: dict, end: int, through_end: int, counted: int | None = None) -> int:
    """`unread_broadcasts` for `reader`, given the board's last seq `end` and the count of broadcasts through
    it (every own broadcast the reader counts lies after its cursor and at most at `end`), and its `_counted`
    own broadcasts when the caller has them."""
    cursor = reader.get("cursor")
    if cursor is None:
        return 0
    own = len(reader.get("own", [])) + (_counted(state, reader, end) if counted is None else counted)
    return max(0, through_end - broadcasts_through(state, int(cursor)) - own)


def unread_count(state: Reader, agent: str) -> int:
    retracted = _retracted(state)
    gone = {p["seq"] for p in retracted if p["to"] == agent}
    inbox = [seq for seq in reader_of(state, agent)["inbox"] if seq not in gone]
    return len(inbox) + unread_broadcasts(state, agent, retracted)


def unread(state: Reader, agent: str, set_aside: stored.SetAside | None = None) -> list[dict]:
    """The posts that count as unread for `agent`: those directed to it that it has not read, and posts to
    everyone from others after its cursor. Scans only past the cursor, and stops once all are found. Posts
    that cannot be read are left out (noted in `set_aside`)."""
    set_aside = [] if set_aside is None else set_aside
    reader = reader_of(state, agent, set_aside)
    seqs = set(reader["inbox"])
    wanted = unread_broadcasts(state, agent)
    seq = int(reader.get("cursor") or 0)
    end = current_seq(state)
    found = 0
    while found < wanted and seq < end:
        seq += 1
        record = get_post(state, seq, set_aside)
        if record and record["to"] is None and record["from"] != agent and record["kind"] in AGENT_KINDS \
                and not record.get("retracted"):  # as the count leaves it out
            seqs.add(seq)
            found += 1
    posts = [get_post(state, s, set_aside) for s in sorted(seqs)]
    return [p for p in posts if p is not None and not p.get("retracted")]  # an undone post is not news


def recent(state: Reader, agent: str | None, limit: int, everything: bool,
           set_aside: stored.SetAside | None = None) -> list[dict]:
    """The last `limit` posts `agent` may see (all posts for `everything` or without an agent), oldest first;
    those that cannot be read are left out (noted in `set_aside`)."""
    set_aside = [] if set_aside is None else set_aside
    found: list[dict] = []
    seq = current_seq(state)
    floor = max(0, seq - RECENT_SCAN)
    while seq > floor and len(found) < limit:
        record = get_post(state, seq, set_aside)
        if record and not record.get("retracted") and \
                (everything or agent is None or record["to"] in (None, agent) or record["from"] == agent):
            found.append(record)
        seq -= 1
    found.reverse()
    return found


def view(post: dict) -> dict:
    view = {k: post.get(k) for k in ("seq", "id", "from", "to", "kind", "text", "time", "resolved")}
    return view | ({"reply_to": post["reply_to"]} if post.get("reply_to") else {})


