"""The board and wake-ups: read cursors, inboxes for posts sent before an agent's first call, reading marks
read, heartbeat counts, refused ops reported to their actor, and `wait` taking what it returns."""

from __future__ import annotations

import threading
import time

import pytest
from ledger_helpers import Clock, ledger_head, ledger_record

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain import board
from git_lanes.domain.coordination import FOLD
from git_lanes.errors import Conflict, NotFound, UserError
from git_lanes.ledger.merge import refused_op
from git_lanes.store import RefUpdate


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


def test_old_broadcasts_do_not_flood_a_new_agent_but_directed_posts_reach_it(lanes):
    lanes.board_post("before anyone joined", "lead")
    lanes.board_post("for you, when you start", "lead", kind="handoff", to="late")
    lanes.agent_register("late")
    lanes.board_post("after it joined", "lead")
    read = lanes.board_read("late", unread_only=True)
    assert [p["text"] for p in read["posts"]] == ["for you, when you start", "after it joined"]
    assert lanes.board_read("late", unread_only=True)["posts"] == []
    assert lanes.agent_heartbeat("late")["unread"] == 0


def test_posts_to_others_are_not_unread_and_own_posts_never_are(lanes):
    for agent in ("a", "b", "c"):
        lanes.agent_register(agent)
    lanes.board_post("to b only", "a", to="b")
    lanes.board_post("to everyone else", "a", kind="question")
    assert lanes.agent_heartbeat("a")["unread"] == 0
    assert lanes.agent_heartbeat("b")["unread"] == 2
    assert lanes.agent_heartbeat("c")["unread"] == 1
    everything = lanes.board_read("c", everything=True)
    assert [p["text"] for p in everything["posts"]] == ["to b only", "to everyone else"]
    assert [p["unread"] for p in everything["posts"]] == [False, True]
    assert lanes.agent_heartbeat("c")["unread"] == 0


def test_bad_posts_are_refused_and_change_nothing(lanes, repo):
    lanes.agent_register("a")
    head = ledger_head(repo)
    for text, kwargs in [("", {}), ("x" * 20_000, {}), ("hi", {"kind": "ticket_ready"}), ("hi", {"to": "a"}),
                         ("hi", {"to": "../etc"})]:
        with pytest.raises(UserError):
            lanes.board_post(text, "a", **kwargs)
    with pytest.raises(UserError) as raised:
        lanes.board_post("hi", "bad agent")
    assert raised.value.code == "invalid_agent"
    assert ledger_head(repo) == head


def test_resolve_marks_a_post_once(lanes):
    seq = lanes.board_post("is the schema final?", "a", kind="question")["post"]
    assert lanes.board_resolve(seq, actor="b")["resolved_by"] == "b"
    assert lanes.board_read()["posts"][0]["resolved"]["by"] == "b"
    with pytest.raises(Conflict) as raised:
        lanes.board_resolve(seq, actor="b")
    assert raised.value.code == "already_resolved"
    with pytest.raises(NotFound) as raised:
        lanes.board_resolve(99, actor="b")
    assert raised.value.code == "unknown_post"


def test_wait_returns_at_once_for_what_is_already_there_and_at_the_timeout_otherwise(lanes):
    lanes.agent_register("b")
    began = time.monotonic()
    assert lanes.wait("b", timeout=0.3)["reason"] == "timeout"
    assert time.monotonic() - began >= 0.3
    lanes.board_post("ping", "a", to="b")
    got = lanes.wait("b", timeout=5)
    assert got["reason"] == "post" and [p["text"] for p in got["posts"]] == ["ping"]
    assert lanes.agent_heartbeat("b")["unread"] == 0


def test_wait_wakes_when_another_writer_posts(lanes, repo, monkeypatch):
    from git_lanes.ledger.watch import LedgerWatch

    lanes.agent_register("b")
    other = Lanes(repo)
    blocked = threading.Event()
    watch_wait = LedgerWatch.wait

    def blocking(self, *args, **kwargs):  # the waiter found nothing and now watches the ref
        blocked.set()
        return watch_wait(self, *args, **kwargs)

    monkeypatch.setattr(LedgerWatch, "wait", blocking)

    def post_once_waiting() -> None:
        # posting only once the waiter blocks proves the wake came from watching, not from a first read
        if blocked.wait(timeout=60):
            other.board_post("wake up", "a")

    thread = threading.Thread(target=post_once_waiting)
    thread.start()
    got = lanes.wait("b", timeout=120)
    thread.join()
    assert blocked.is_set(), "the waiter never blocked"
    assert got["reason"] == "post" and got["posts"][0]["text"] == "wake up"


def test_a_refused_op_reaches_its_actor_on_the_next_heartbeat(lanes, repo):
    store = lanes.ctx.store
    task = lanes.task_create("t", actor="lead")["task"]
    lanes.task_claim(task, "winner")
    lost = ledger.make_op("task.claim", "loser", {"task": task, "agent": "loser"}, lanes.ctx.now())
    new, refusal = ledger.apply_op(store, ledger_head(repo), lost, FOLD)
    assert new is None
    stand_in = refused_op(lost, refusal)
    recorded, _ = ledger.apply_op(store, ledger_head(repo), stand_in, FOLD)
    store.update_refs([RefUpdate("refs/lanes/ledger", recorded, ledger_head(repo), "test: sync stand-in")])
    beat = lanes.agent_heartbeat("loser")
    assert [(r["original"]["id"], r["error"]) for r in beat["refused"]] == [(lost.id, "task_claimed")]
    assert lanes.agent_heartbeat("loser")["refused"] == []


def test_invalid_wait_arguments(lanes):
    with pytest.raises(UserError) as raised:
        lanes.wait("b", timeout=-1)
    assert raised.value.code == "invalid_timeout"
    with pytest.raises(UserError) as raised:
        lanes.wait("no spaces", timeout=0)
    assert raised.value.code == "invalid_agent"


def test_unread_counts_leave_out_own_posts_however_they_interleave(lanes):
    for agent in ("a", "b"):
        lanes.agent_register(agent)
    for text, sender in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("a3", "a"), ("a4", "a"), ("q", "b")]:
        lanes.board_post(text, sender, kind="question" if text == "q" else "note")
    lanes.board_post("direct", "b", to="a")
    assert lanes.agent_heartbeat("a")["unread"] == 3
    assert lanes.agent_heartbeat("b")["unread"] == 4
    assert [p["text"] for p in lanes.board_read("a", unread_only=True)["posts"]] == ["b1", "q", "direct"]
    lanes.board_post("a5", "a")
    assert lanes.agent_heartbeat("a")["unread"] == 0
    assert [p["text"] for p in lanes.board_read("b", unread_only=True)["posts"]] == ["a1", "a2", "a3", "a4", "a5"]
    assert lanes.agent_heartbeat("b")["unread"] == 0


def _interleave(lanes, rounds: int) -> None:
    for i in range(rounds):
        lanes.board_post(f"a{i}", "a")
        lanes.board_post(f"b{i}", "b")


def _unread_listed(lanes, agent: str) -> int:
    """What a read would show as unread, counted from the posts themselves (it marks them read)."""
    return len(lanes.board_read(agent, unread_only=True)["posts"])


def test_a_sender_posting_among_others_lists_only_its_last_own_broadcasts(lanes, repo):
    for agent in ("a", "b"):
        lanes.agent_register(agent)
    _interleave(lanes, 40)
    place = ledger_record(repo, "board/readers/a.json")
    assert place["own"] == list(range(79 - 2 * (board.OWN_LISTED - 1), 80, 2))  # a's last 16 posts
    assert place["own_before"] == 39 - board.OWN_LISTED  # its posts since the cursor left b's first unread
    assert lanes.agent_heartbeat("a")["unread"] == 40
    assert lanes.agent_heartbeat("b")["unread"] == 40
    assert _unread_listed(lanes, "a") == 40
    assert _unread_listed(lanes, "b") == 40
    assert lanes.agent_heartbeat("a")["unread"] == lanes.agent_heartbeat("b")["unread"] == 0
    assert "own_before" not in ledger_record(repo, "board/readers/a.json")


@pytest.mark.parametrize("through", [0, 3, 20, 47, 66, 80])
def test_a_partial_read_counts_again_the_own_broadcasts_left_after_it(lanes, through):
    for agent in ("a", "b"):
        lanes.agent_register(agent)
    _interleave(lanes, 40)  # seqs 1..80: a's odd, b's even
    lanes._append("board.read", "a", {"agent": "a", "through": through})
    expected = len([seq for seq in range(2, 81, 2) if seq > through])
    assert lanes.agent_heartbeat("a")["unread"] == expected
    assert _unread_listed(lanes, "a") == expected
    lanes.board_post("one more", "b")
    assert lanes.agent_heartbeat("a")["unread"] == 1


def test_a_read_position_from_before_the_count_keeps_counting_right(lanes, repo):
    """0.2.0 listed every own broadcast since the cursor: such a record reads as it did, and the next
    post trims it."""
    for agent in ("a", "b"):
        lanes.agent_register(agent)
    _interleave(lanes, 30)
    before = ledger_record(repo, "board/readers/a.json")
    listed = list(range(3, 60, 2))  # every post of a's after b's first, as 0.2.0 kept them
    store = lanes.ctx.store
    head = ledger.head(store)
    from git_lanes.ledger.log import state_tree

    import json
    tree = store.write_record_tree(state_tree(store, head), {
        "board/readers/a.json": json.dumps({**{k: v for k, v in before.items() if k != "own_before"},
                                            "own": listed}).encode()})
    commit = store.write_records(tree, {}, [head], "old reader\n\n" + json.dumps(
        {"format": 1, "id": "0" * 15 + "1", "type": "agent.heartbeat", "actor": "a", "time": 1.0,
         "args": {"agent": "a"}, "result": {}}))
    store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: a 0.2.0 read position")])
    assert lanes.agent_heartbeat("a")["unread"] == 30
    lanes.board_post("a30", "a")
    place = ledger_record(repo, "board/readers/a.json")
    assert len(place["own"]) == board.OWN_LISTED and place["own_before"] == len(listed) + 1 - board.OWN_LISTED
    assert lanes.agent_heartbeat("a")["unread"] == 30
    assert _unread_listed(lanes, "a") == 30


def test_an_undone_post_leaves_every_count_and_a_redo_brings_it_back(lanes, repo):
    """A retracted post is not news: no count holds it (it held a count for good before, while no read
    listed it, so `unread` never fell to 0), and undoing the undo makes it unread again."""
    for agent in ("a", "b"):
        lanes.agent_register(agent)
    everyone = lanes.board_post("wrong channel", "b")
    directed = lanes.board_post("wrong agent", "b", to="a")
    assert lanes.agent_heartbeat("a")["unread"] == 2
    undone = [lanes.undo(posted["op"]) for posted in (everyone, directed)]
    assert ledger_record(repo, board.RETRACTED)["posts"] == [{"seq": 1, "from": "b", "to": None},
                                                             {"seq": 2, "from": "b", "to": "a"}]
    assert lanes.agent_heartbeat("a")["unread"] == 0
    assert lanes.board_read("a", unread_only=True)["posts"] == []
    lanes.undo(undone[0]["ledger"][0])
    assert ledger_record(repo, board.RETRACTED)["posts"] == [{"seq": 2, "from": "b", "to": "a"}]
    assert lanes.agent_heartbeat("a")["unread"] == 1
    assert [p["text"] for p in lanes.board_read("a", unread_only=True)["posts"]] == ["wrong channel"]
    assert lanes.agent_heartbeat("a")["unread"] == 0


def _older_writer_left(lanes, agent: str, record: dict) -> None:
    """Write `agent`'s read position as a git-lanes from another version left it, in a commit of its own."""
    import json

    from git_lanes.ledger.log import state_tree

    store = lanes.ctx.store
    head = ledger.head(store)
    tree = store.write_record_tree(state_tree(store, head), {f"board/readers/{agent}.json": json.dumps(record).encode()})
    commit = store.write_records(tree, {}, [head], "older writer\n\n" + json.dumps(
        {"format": 1, "id": "0" * 15 + "2", "type": "agent.heartbeat", "actor": agent, "time": 1.0,
         "args": {"agent": agent}, "result": {}}))
    store.update_refs([RefUpdate("refs/lanes/ledger", commit, head, "test: an older writer's read position")])


def test_a_count_an_older_writer_carried_past_a_read_is_taken_again(lanes, repo):
    """A git-lanes from before own_before moves the cursor on a read and keeps the count as it was. Taken as
    it stands, the count would hide as many posts from others, and the agent's next post would move its
    cursor past them for good; its cursor now differs from the one the count was taken at (`own_at`)."""
    for agent in ("a", "b"):
        lanes.agent_register(agent)
    _interleave(lanes, 30)  # seqs 1..60: a's odd, b's even
    place = ledger_record(repo, "board/readers/a.json")
    assert place["own_before"] == 29 - board.OWN_LISTED and place["own_at"] == place["cursor"]
    _older_writer_left(lanes, "a", {**place, "cursor": 60, "own": []})  # its read of everything, count kept
    lanes.board_post("after the read", "b")
    assert lanes.agent_heartbeat("a")["unread"] == 1
    lanes.board_post("a's next", "a")  # nothing else unread? its cursor would jump past b's post
    assert [p["text"] for p in lanes.board_read("a", unread_only=True)["posts"]] == ["after the read"]
    assert "own_before" not in ledger_record(repo, "board/readers/a.json")


def test_a_post_reads_the_boards_end_without_matching_the_paths_of_earlier_posts_again(lanes, monkeypatch):
    """The board's end is found from the posts the overlay holds (up to CHECKPOINT_EVERY ops' edits): every
    op matched each of their paths against the post pattern again. A path's key is a function of the path
    alone, so it is matched once."""
    from git_lanes.domain import board_index

    lanes.claim_add(["src/**"], "lead")  # the first op: a checkpoint; the next ones are deltas
    for n in range(4):
        lanes.board_post(f"post {n}", "coder-1")
    store = lanes.ctx.store
    overlaid = [p for p in ledger.log.materialized(store, ledger.head(store)).overlay if p.startswith("board/0")]
    assert len(overlaid) == 4  # the precondition: the posts are the overlay's

    class Spy:
        def __init__(self, pattern) -> None:
            self.pattern, self.matched = pattern, []

        def fullmatch(self, path: str):
            self.matched.append(path)
            return self.pattern.fullmatch(path)

    spy = Spy(board_index._POST)
    monkeypatch.setattr(board_index, "_POST", spy)
    assert lanes.board_post("post 4", "coder-1").post == 5
    assert spy.matched in ([], [board_index.post_path(4)])  # at most the one no op had read the end after


def test_every_face_names_a_post_by_number_hash_number_or_a_prefix_of_its_id(lanes):
    """The rule lives in the domain (`board.post_number`), so the SDK, MCP and REST take what the CLI takes."""
    first = lanes.board_post("is the schema final?", "a", kind="question")["post"]
    second = lanes.board_post("who owns the cache?", "a", kind="question")["post"]
    ids = {p["seq"]: p["id"] for p in lanes.board_read()["posts"]}
    assert lanes.board_answer(f"#{first}", "yes", "b")["answers"] == first
    assert lanes.board_resolve(f" {ids[second][:12]} ", actor="b")["post"] == second
    with pytest.raises(UserError) as raised:
        lanes.board_resolve(None, actor="b")  # type: ignore[arg-type]
    assert raised.value.code == "invalid_id"
