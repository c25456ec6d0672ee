"""Unanswered questions: every one is shown however many posts came after it (the dashboard read the last 100
posts and said "No unanswered questions" of one with 100 after it), from an index the fold keeps, so the read
costs the index and the questions' posts, never the board's length. A ledger written before the index shows
its open questions too, and is indexed by its next post. Every face lists them, and every face reads the
same number of recent posts by default."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from conftest import run_cli
from http_helpers import Server
from ledger_helpers import Clock, ledger_record
from mcp_helpers import call, mcp_session

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain import BOARD_LIMIT, questions
from git_lanes.domain.coordination import FOLD
from git_lanes.ledger import Op, State


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


def unanswered(lanes: Lanes, agent: str | None = None) -> list[str]:
    return [p["text"] for p in lanes.board_read(agent, unanswered=True)["posts"]]


def notes(lanes: Lanes, count: int, agent: str = "coder-1") -> None:
    for n in range(count):
        lanes.board_post(f"note {n}", agent)


def test_a_question_with_a_hundred_posts_after_it_is_still_unanswered(lanes):
    asked = lanes.board_post("Size or age?", "coder-2", kind="question")
    notes(lanes, 120)
    assert asked["post"] not in [p["seq"] for p in lanes.board_read(limit=100)["posts"]]  # what the page read
    read = lanes.board_read(unanswered=True)
    assert [(p["seq"], p["text"]) for p in read["posts"]] == [(asked["post"], "Size or age?")]
    assert read["marked_through"] is None


def test_answered_and_resolved_questions_leave_the_list(lanes, repo):
    first = lanes.board_post("Size or age?", "coder-2", kind="question")
    second = lanes.board_post("Which port?", "coder-3", kind="question")
    third = lanes.board_post("Who owns auth?", "coder-3", kind="question", to="coder-1")
    lanes.board_post("not a question", "coder-1")
    assert unanswered(lanes) == ["Size or age?", "Which port?", "Who owns auth?"]
    lanes.board_answer(first["post"], "By size", "lead")
    lanes.board_resolve(second["post"], "coder-3")
    assert unanswered(lanes) == ["Who owns auth?"]
    assert ledger_record(repo, questions.INDEX)["posts"] == [third["post"]]
    # an agent sees the questions to everyone and to itself, as on the board
    assert unanswered(lanes, "coder-2") == []
    assert unanswered(lanes, "coder-1") == ["Who owns auth?"]
    lanes.board_answer(third["post"], "coder-1 does", "coder-1")
    assert unanswered(lanes) == [] and ledger_record(repo, questions.INDEX) is None


def test_undo_and_redo_keep_the_list_in_step(lanes, repo):
    asked = lanes.board_post("Size or age?", "coder-2", kind="question")
    later = lanes.board_post("Which port?", "coder-3", kind="question")
    answered = lanes.board_answer(asked["post"], "By size", "lead")
    assert unanswered(lanes) == ["Which port?"]
    undone = lanes.undo(answered["op"], actor="lead")  # the answer taken back: the question waits again
    assert unanswered(lanes) == ["Size or age?", "Which port?"]
    lanes.undo(later["op"], actor="lead")  # the question itself taken back: nobody is to answer it
    assert unanswered(lanes) == ["Size or age?"]
    lanes.undo(undone["op"], actor="lead")  # the answer redone
    assert unanswered(lanes) == []
    assert ledger_record(repo, questions.INDEX) is None


class BeforeTheIndex:
    """The fold of a git-lanes from before the open questions' index: the same decisions, without the index
    record and without the `indexed` mark on the posts it writes."""

    def apply(self, state: State, op: Op) -> tuple[dict, dict]:
        edits, result = FOLD.apply(state, op)
        edits = {path: ({k: v for k, v in record.items() if k != "indexed"} if record is not None
                        and path.startswith("board/") else record)
                 for path, record in edits.items() if not path.startswith("questions/")}
        return edits, result

    def summary(self, op: Op, result: dict) -> str:
        return FOLD.summary(op, result)


def old_post(lanes: Lanes, text: str, agent: str, kind: str = "note") -> int:
    op = ledger.make_op("board.post", agent, {"text": text, "kind": kind, "to": None}, lanes.ctx.now())
    return ledger.append(lanes.ctx.store, op, BeforeTheIndex()).op.result["post"]


def test_a_ledger_written_before_the_index_shows_its_open_questions_and_is_indexed_by_its_next_post(lanes):
    store = lanes.ctx.store
    old = old_post(lanes, "Size or age?", "coder-2", "question")
    settled = old_post(lanes, "Which port?", "coder-3", "question")
    ledger.append(store, ledger.make_op("board.resolve", "lead", {"post": settled}, lanes.ctx.now()),
                  BeforeTheIndex())
    for n in range(70):  # past two checkpoints: the old posts lie in a checkpoint's tree, not in its overlay
        old_post(lanes, f"old note {n}", "coder-1")
    assert ledger_record(lanes.root, questions.INDEX) is None
    assert unanswered(lanes) == ["Size or age?"]

    lanes.board_post("new note", "coder-1")  # this git-lanes' first post indexes what came before it
    assert ledger_record(lanes.root, questions.INDEX)["posts"] == [old]
    later = lanes.board_post("Cache where?", "coder-3", kind="question")
    assert unanswered(lanes) == ["Size or age?", "Cache where?"]

    # an older git-lanes on another machine keeps posting and answering: its question shows, and what it
    # resolved leaves, though it never touched the index
    newer_old = old_post(lanes, "Lock or queue?", "coder-4", "question")
    ledger.append(store, ledger.make_op("board.resolve", "lead", {"post": later["post"]}, lanes.ctx.now()),
                  BeforeTheIndex())
    assert unanswered(lanes) == ["Size or age?", "Lock or queue?"]
    lanes.board_answer(old, "By age", "lead")
    assert unanswered(lanes) == ["Lock or queue?"]
    assert newer_old in ledger_record(lanes.root, questions.INDEX)["posts"]


def test_reading_the_unanswered_questions_reads_the_index_and_their_posts_not_the_board(lanes):
    asked = lanes.board_post("Size or age?", "coder-2", kind="question")
    notes(lanes, 300)
    store = lanes.ctx.store
    state = ledger.state_at(store, ledger.head(store))
    assert [p["seq"] for p in questions.open_posts(state)] == [asked["post"]]
    read = sorted(path for path in state._records if path.startswith(("board/", "questions/")))
    last = lanes.board_read(limit=1)["posts"][0]["seq"]
    from git_lanes.domain.board_index import post_path

    assert read == sorted([post_path(asked["post"]), post_path(last), questions.INDEX])


def test_every_face_reads_the_same_number_of_recent_posts_by_default(lanes, repo):
    from git_lanes.cli import board as board_cli

    assert board_cli.BOARD_LIMIT == BOARD_LIMIT  # spelled there: a command module loads no domain code
    notes(lanes, BOARD_LIMIT + 5)
    cli = run_cli("board", "read", "--json", cwd=repo)
    assert cli.code == 0, cli.err
    assert len(cli.json["posts"]) == BOARD_LIMIT
    assert len(lanes.board_read()["posts"]) == BOARD_LIMIT
    with Server(repo) as server:
        assert len(server.get("/api/v1/board").json["posts"]) == BOARD_LIMIT
        read = server.post("/api/v1/board/read", {"agent": "coder-2"})
        assert read.status == 200 and len(read.json["posts"]) == BOARD_LIMIT


def test_the_cli_rest_and_mcp_list_the_unanswered_questions(lanes, repo):
    asked = lanes.board_post("Size or age?", "coder-2", kind="question")
    notes(lanes, BOARD_LIMIT + 5)
    cli = run_cli("board", "read", "--unanswered", "--json", cwd=repo)
    assert cli.code == 0, cli.err
    assert [p["seq"] for p in cli.json["posts"]] == [asked["post"]]
    text = run_cli("board", "read", "--unanswered", cwd=repo)
    assert text.code == 0 and "Size or age?" in text.out
    both = run_cli("board", "read", "--unanswered", "--unread", "--agent", "coder-1", cwd=repo)
    assert both.code == 2 and "cannot be used together" in both.err and "Traceback" not in both.err
    with Server(repo) as server:
        reply = server.get("/api/v1/board?unanswered=true")
        assert reply.status == 200 and [p["seq"] for p in reply.json["posts"]] == [asked["post"]]
        assert server.get("/api/v1/board?unanswered=maybe").status == 400

    async def scenario() -> dict:
        async with mcp_session(repo, "--agent", "coder-1") as session:
            return await call(session, "read_board", unanswered_only=True)

    assert [p["seq"] for p in anyio.run(scenario)["posts"]] == [asked["post"]]
    lanes.board_answer(asked["post"], "By size", "lead")
    cli = run_cli("board", "read", "--unanswered", cwd=repo)
    assert cli.code == 0 and cli.out.strip() == "no unanswered questions"


def test_a_peers_broken_index_neither_stops_the_board_nor_hides_a_question(lanes, repo):
    from test_malformed_records import _rewrite_ledger_record

    first = lanes.board_post("Size or age?", "coder-2", kind="question")
    second = lanes.board_post("Which port?", "coder-3", kind="question")
    lanes.board_post("a note", "coder-1")
    _rewrite_ledger_record(repo, questions.INDEX, lambda record: {**record, "posts": "many"})
    read = lanes.board_read(unanswered=True)
    assert [p["text"] for p in read["posts"]] == ["Size or age?", "Which port?"]
    assert [u.key for u in read.unreadable] == [questions.INDEX]
    lanes.board_resolve(first["post"], "coder-2")  # the fold writes a good one in its place
    assert ledger_record(repo, questions.INDEX)["posts"] == [second["post"]]
    read = lanes.board_read(unanswered=True)
    assert [p["text"] for p in read["posts"]] == ["Which port?"] and read.unreadable == ()
