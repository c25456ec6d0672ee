"""Only a question is answered. Answering a note (REST `POST /board/{post}/answer`, the dashboard's route, or
the SDK's `board_answer`) used to post the "answer" to its sender and mark the note resolved as a question
answered. The domain's fold refuses it (`not_a_question`, a user error: exit 1, HTTP 400) before anything is
written, so every face refuses it alike."""

from __future__ import annotations

import pytest
from conftest import git
from http_helpers import Server

from git_lanes import AgentSession
from git_lanes.api import Lanes
from git_lanes.errors import Refused


def ledger_head(repo) -> str:
    return git("rev-parse", "refs/lanes/ledger", cwd=repo).strip()


def test_the_sdk_refuses_to_answer_a_note_a_handoff_or_a_system_record(repo):
    api = Lanes(repo)
    note = api.board_post("Schema is in docs/api.md", "coder-1")["post"]
    handoff = api.board_post("yours now", "coder-1", kind="handoff", to="coder-2")["post"]
    ticket = api.ticket_open("Docs")["ticket"]
    api.task_done(api.task_create("Write it", ticket=ticket)["task"])
    ready = [p["seq"] for p in api.board_read(None, limit=100)["posts"] if p["kind"] == "ticket_ready"][0]
    before = ledger_head(repo)
    with AgentSession(repo, "lead") as session:
        for post, kind in ((note, "note"), (handoff, "handoff"), (ready, "ticket_ready")):
            with pytest.raises(Refused) as refused:
                session.api.board_answer(post, "thanks", "lead")
            assert refused.value.code == "not_a_question" and refused.value.exit_code == 1
            assert f"post #{post} is a {kind}, not a question" in refused.value.message
    assert ledger_head(repo) == before  # nothing written
    assert "git lanes board post TEXT --to coder-1" in str(_hint(api, note))
    assert "board read --unanswered" in str(_hint(api, ready))
    assert all(p["resolved"] is None for p in api.board_read(None, limit=100)["posts"])


def _hint(api: Lanes, post: int) -> str | None:
    with pytest.raises(Refused) as refused:
        api.board_answer(post, "thanks", "lead")
    return refused.value.hint


def test_rest_refuses_to_answer_a_note_with_400_and_the_code(repo):
    api = Lanes(repo)
    note = api.board_post("Schema is in docs/api.md", "coder-1")["post"]
    question = api.board_post("Size or age?", "coder-1", kind="question")["post"]
    before = ledger_head(repo)
    with Server(repo) as server:
        refused = server.post(f"/api/v1/board/{note}/answer", {"text": "thanks", "agent_id": "lead"})
        assert (refused.status, refused.json["error"]) == (400, "not_a_question"), refused.json
        assert refused.json["kind"] == "note" and "not a question" in refused.json["message"]
        assert "POST /api/v1/board" in refused.json["hint"], refused.json["hint"]  # in REST's words
        assert ledger_head(repo) == before
        answered = server.post(f"/api/v1/board/{question}/answer", {"text": "By size", "agent_id": "lead"})
        assert answered.status == 200 and answered.json["answers"] == question, answered.json
    note_post = [p for p in api.board_read(None, limit=100)["posts"] if p["seq"] == note][0]
    assert note_post["resolved"] is None


def test_the_cli_and_the_mcp_tool_answer_a_question_and_refuse_a_note_as_rest_does(repo):
    import anyio
    from conftest import run_cli
    from mcp_helpers import call, fails, mcp_session

    api = Lanes(repo)
    note = api.board_post("Schema is in docs/api.md", "coder-1")["post"]
    first = api.board_post("Size or age?", "coder-1", kind="question")["post"]
    second = api.board_post("Which port?", "coder-2", kind="question")["post"]
    before = ledger_head(repo)

    refused = run_cli("board", "answer", str(note), "thanks", "--agent", "lead", "--json", cwd=repo)
    assert refused.code == 1 and refused.json["error"] == "not_a_question", refused.err
    assert refused.json["kind"] == "note" and "Traceback" not in refused.err
    text = run_cli("board", "answer", f"#{note}", "thanks", "--agent", "lead", cwd=repo)
    assert text.code == 1 and f"post #{note} is a note, not a question" in text.err, text.err
    assert ledger_head(repo) == before

    answered = run_cli("board", "answer", f"#{first}", "By size", "--agent", "lead", cwd=repo)
    assert answered.code == 0, answered.err
    assert answered.out.strip() == f"answered #{first} with #{first + 2} (to coder-1); question resolved"

    async def scenario() -> tuple[dict, dict]:
        async with mcp_session(repo, "--agent", "lead") as session:
            return (await fails(session, "answer_question", post=note, text="thanks"),
                    await call(session, "answer_question", post=f"#{second}", text="8080"))

    error, done = anyio.run(scenario)
    assert (error["reason"], error["exit_code"]) == ("not_a_question", 1) and error["message"] == refused.json["message"]
    assert "post_board(" in error["hint"], error["hint"]  # in the tool's words
    assert (done["answers"], done["to"]) == (second, "coder-2")
    assert api.board_read(None, unanswered=True)["posts"] == []


def test_a_withdrawn_question_is_neither_answered_nor_resolved_until_it_is_back(repo):
    """A question whose post was undone is shown to nobody, yet `board answer` sent its asker an answer to it
    (a reply to a post no reader sees) and `board resolve` marked it, so a redo of the post was refused. Both
    now exit 3 (`post_retracted`) in every face; after the redo it is answered as any question."""
    from conftest import run_cli

    api = Lanes(repo)
    asked = api.board_post("Which port?", "coder-1", kind="question")
    undo = api.undo(asked["op"])
    assert api.board_read(None, unanswered=True)["posts"] == []
    before = ledger_head(repo)
    answered = run_cli("board", "answer", str(asked["post"]), "8080", "--agent", "lead", "--json", cwd=repo)
    assert (answered.code, answered.json["error"]) == (3, "post_retracted"), answered.out
    assert f"post #{asked['post']} was withdrawn" in answered.json["message"]
    resolved = run_cli("board", "resolve", str(asked["post"]), "--agent", "lead", "--json", cwd=repo)
    assert (resolved.code, resolved.json["error"]) == (3, "post_retracted"), resolved.out
    with Server(repo) as server:
        rest = server.post(f"/api/v1/board/{asked['post']}/answer", {"text": "8080", "agent_id": "lead"})
        assert (rest.status, rest.json["error"]) == (409, "post_retracted"), rest.json
    assert ledger_head(repo) == before

    api.undo(undo["ledger"][0])  # the redo: the question is back
    assert [p["seq"] for p in api.board_read(None, unanswered=True)["posts"]] == [asked["post"]]
    assert api.board_answer(asked["post"], "8080", "lead")["answers"] == asked["post"]
