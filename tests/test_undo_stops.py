"""`git lanes undo` given no operation undoes the newest one it can, and stops, naming it, at a newer one it
cannot reverse (a review, a publication, a closed ticket, a released workspace...): reaching past it to undo an
older operation is not what was asked. Which ops stop is derived from what undo can reverse, so an op type
added later stops too until it is made undoable or listed as bookkeeping."""

from __future__ import annotations

import pytest
from conftest import git, run_cli
from integration_helpers import claimed_task, work

from git_lanes.domain import ledger_undo
from git_lanes.domain.coordination import HANDLERS


def refused_at(repo, op_type: str) -> dict:
    """`undo` run with no operation: refused in one line naming `op_type`, with the way to undo an older one."""
    before = git("for-each-ref", cwd=repo) + git("rev-parse", "refs/lanes/ledger", cwd=repo)
    result = run_cli("undo", "--json", cwd=repo)
    assert result.code == 1, result.out + result.err
    assert result.json["error"] == "not_undoable" and op_type in result.json["message"], result.json
    assert "\n" not in result.json["message"] and "git lanes undo OP" in result.json["hint"], result.json
    human = run_cli("undo", cwd=repo)
    assert human.code == 1 and human.err.startswith("git-lanes: error: ") and op_type in human.err.splitlines()[0]
    assert git("for-each-ref", cwd=repo) + git("rev-parse", "refs/lanes/ledger", cwd=repo) == before  # nothing moved
    return result.json


def test_every_op_type_undo_cannot_reverse_stops_it_but_bookkeeping(monkeypatch):
    """The stops are what undo cannot reverse, less the bookkeeping it passes over: an op type nobody
    classified (one added after this was written) stops an undo."""
    for op_type in HANDLERS:
        expected = op_type not in ledger_undo.UNDOABLE and op_type not in ledger_undo.PASSED_OVER
        assert ledger_undo.stops_undo(op_type) is expected, op_type
    assert ledger_undo.stops_undo("ticket.reopen")  # not known to any version yet
    assert not ledger_undo.PASSED_OVER & ledger_undo.UNDOABLE
    assert ledger_undo.PASSED_OVER <= set(HANDLERS)
    for op_type in ("task.handoff", "task.review", "ticket.publish", "ticket.close", "ticket.release_claims",
                    "publish.intent", "publish.failed", "gc.prune", "worktree.assign", "worktree.release"):
        assert ledger_undo.stops_undo(op_type), op_type


def sent_back_for_review(api, repo) -> tuple[str, str]:
    """Two tasks changing one file: the first integrates, the second's `task done` collides and is sent back
    to its owner (a task.review op). Returns (first, second)."""
    one, ws1 = claimed_task(api, "coder-1", "one", "Session store")
    two, ws2 = claimed_task(api, "coder-2", "two", "Login form")
    work(api, "coder-1", ws1, {"src/app.py": "session\n"})
    work(api, "coder-2", ws2, {"src/app.py": "form\n"})
    assert api.task_done(one, "coder-1")["integrated"]["status"] == "accepted"
    assert run_cli("task", "done", two[:8], "--agent", "coder-2", cwd=repo).code == 3  # collided: sent back
    return one, two


def test_an_undo_given_no_operation_stops_at_a_task_sent_back_for_review(api, repo):
    """task.review: a task whose integration collided goes back to its owner. `undo` undid the operation
    before it (the other task's integration) without a word."""
    one, two = sent_back_for_review(api, repo)
    assert api.task_show(two)["status"] == "needs_review"
    refused_at(repo, "task.review")
    assert api.task_show(one)["status"] == "done"


@pytest.fixture
def published(api, repo, tmp_path):
    """A ticket whose one task integrated, published (`--pr`: no command runs) to a bare repository."""
    bare = tmp_path / "forge.git"
    git("init", "--quiet", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=repo)
    git("push", "--quiet", "origin", "main", cwd=repo)
    ticket = api.ticket_open("Login flow")["ticket"]
    task, ws = claimed_task(api, "coder-1", "one", "Session store", ticket, ("src/**",))
    work(api, "coder-1", ws, {"src/app.py": "session\n"})
    api.task_done(task, "coder-1")
    api.claim_add(["src/**"], "coder-1", task=task)  # what the ticket's close leaves to release
    result = run_cli("publish", ticket[:8], "--pr", "https://forge.example/acme/project/pull/7", cwd=repo)
    assert result.code == 0, result.err
    return ticket, bare


def test_an_undo_given_no_operation_stops_at_a_publication_and_a_closed_ticket(api, repo, published):
    """ticket.publish, ticket.close, ticket.release_claims: `undo` after each undid an older operation
    (the task's integration, its claim) without a word."""
    ticket, bare = published
    branch = f"lanes/ticket/{ticket[:8]}"
    refused_at(repo, "ticket.publish")
    git("push", "--quiet", str(bare), f"refs/lanes/heads/tickets/{ticket[:8]}:refs/heads/main", cwd=repo)
    assert api.close_ticket_on_merge(ticket)["merged"], branch  # merged by a fast-forward
    refused_at(repo, "ticket.close")
    assert api.release_ticket_claims(ticket)["released"]
    refused_at(repo, "ticket.release_claims")
    assert api.ticket_show(ticket)["status"] == "closed"


def test_an_undo_given_no_operation_stops_at_a_released_workspace(api, repo):
    """worktree.release: the agent's workspace went with it. `undo` undid the commit before it."""
    api.assign_worktree("coder-1", lane="feature")
    work(api, "coder-1", repo / ".lanes" / "workspaces" / "feature", {"a.txt": "a\n"})
    committed = git("rev-parse", "refs/lanes/heads/feature", cwd=repo)
    api.release_worktree("coder-1")
    refused_at(repo, "worktree.release")
    assert git("rev-parse", "refs/lanes/heads/feature", cwd=repo) == committed


def test_an_undo_named_explicitly_refuses_an_operation_it_cannot_wholly_reverse(api, repo):
    """`git lanes undo OP` of a `task done` sent back for review reversed nothing of the review, and said the
    operation was undone. Named or not, an operation undo cannot reverse is refused, and nothing moves."""
    one, two = sent_back_for_review(api, repo)
    newest = run_cli("op", "log", "--json", cwd=repo).json[0]
    before = git("for-each-ref", cwd=repo) + git("rev-parse", "refs/lanes/ledger", cwd=repo)
    result = run_cli("undo", newest["id"][:8], "--json", cwd=repo)
    assert (result.code, result.json["error"]) == (1, "not_undoable"), result.out + result.err
    assert "task.review" in result.json["message"] and "op show" in result.json["hint"]
    assert git("for-each-ref", cwd=repo) + git("rev-parse", "refs/lanes/ledger", cwd=repo) == before
    assert api.task_show(two)["status"] == "needs_review"
