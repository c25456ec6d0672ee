"""A ticket whose pull request was merged is closed for good: `publish sync` deleted its integration lane and
released its claims. Publishing it again, or giving it another task, is asking for a state it is past (exit 3,
`ticket_closed`, as the man page lists "a closed ticket"), never a half-kept promise: a task let into it was
integrated into a lane nobody would publish, and the next `publish sync` deleted that lane again."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, run_cli
from integration_helpers import claimed_task, with_forge, work

from git_lanes.api import Lanes
from git_lanes.errors import Refused


def merged_ticket(tmp_path: Path, repo: Path) -> tuple[Lanes, str]:
    """A ticket published to a bare forge and merged there by a fast-forward, not closed yet."""
    forge = with_forge(tmp_path, repo)
    api = Lanes(repo)
    ticket = api.ticket_open("Login")["ticket"]
    task, ws = claimed_task(api, "coder-1", "one", "Login", ticket)
    work(api, "coder-1", ws, {"login.py": "login\n"})
    api.task_done(task, "coder-1")
    assert api.publish(ticket)["status"] == "branch_published"  # no [publish] pr_command here
    git("push", "-q", str(forge), f"refs/lanes/heads/tickets/{ticket[:8]}:refs/heads/main", cwd=repo)
    return api, ticket


@pytest.fixture
def closed(tmp_path: Path, repo: Path) -> tuple[Lanes, str]:
    """A ticket published to a bare forge, merged there by a fast-forward, and closed by `publish sync`."""
    api, ticket = merged_ticket(tmp_path, repo)
    assert [m["ticket"] for m in api.publish_sync()["merged"]] == [ticket]
    assert api.ticket_show(ticket)["status"] == "closed"
    return api, ticket


def test_publishing_a_closed_ticket_says_it_is_closed_with_exit_3(closed, repo):
    api, ticket = closed
    again = run_cli("publish", ticket[:6], "--json", cwd=repo)
    assert again.code == 3, again.err
    assert again.json["error"] == "ticket_closed"
    assert "task done" not in again.json["hint"]  # every task is done: that is not the way on


def test_a_closed_ticket_takes_no_new_task(closed, repo):
    api, ticket = closed
    before = git("rev-parse", "refs/lanes/ledger", cwd=repo)
    created = run_cli("task", "create", "Late fix", "--ticket", ticket[:6], "--json", cwd=repo)
    assert created.code == 3, created.err
    assert created.json["error"] == "ticket_closed" and "ticket open" in created.json["hint"]
    loose = api.task_create("Late fix")["task"]
    linked = run_cli("ticket", "link", ticket[:6], loose[:8], "--json", cwd=repo)
    assert linked.code == 3, linked.err
    assert linked.json["error"] == "ticket_closed"
    assert api.task_show(loose)["ticket"] is None
    assert len(api.ticket_show(ticket)["tasks"]) == 1
    assert git("rev-list", "--count", f"{before.strip()}..refs/lanes/ledger", cwd=repo).strip() == "1"


def test_a_ready_ticket_that_integrated_nothing_is_not_sent_back_to_finish_its_done_tasks(tmp_path, repo):
    """Its tasks were done with no lane: `task done` said "ticket is ready: `git lanes publish`", and publish
    then answered "finish its tasks with `git lanes task done`", though every one was done."""
    with_forge(tmp_path, repo)
    api = Lanes(repo)
    ticket = api.ticket_open("Docs")["ticket"]
    api.task_done(api.task_create("Write it", ticket=ticket)["task"])
    refused = run_cli("publish", ticket[:6], "--json", cwd=repo)
    assert refused.code == 1 and refused.json["error"] == "nothing_integrated", refused.err
    assert "task done" not in refused.json["hint"]
    lane = f"tickets/{ticket[:8]}"
    assert f"git lanes lane create {lane}" in refused.json["hint"]
    assert f"git lanes promote LANE --into {lane}" in refused.json["hint"]
    api.lane_create("docs")
    (repo / ".lanes" / "workspaces" / "docs" / "docs.md").write_text("docs\n")
    api.commit("docs", "coder-1", lane="docs", auto_accept=True)
    assert run_cli("lane", "create", lane, cwd=repo).code == 0  # the hint, followed
    assert run_cli("promote", "docs", "--into", lane, "--auto-accept", cwd=repo).code == 0
    again = run_cli("publish", ticket[:6], "--json", cwd=repo)
    assert again.code == 0 and again.json["pushed"], again.err


def test_a_ticket_a_task_joined_after_publishing_is_not_closed_by_any_face(tmp_path, repo):
    """`publish sync` left a ticket reopened by a late task alone, but the MCP tool `close_ticket_on_merge` (and
    the SDK's call) closed it once its first branch merged, with the late task still open in it. The domain's
    `ticket.close` now refuses any ticket that is not published, and both faces ask it."""
    import anyio
    from mcp_helpers import fails, mcp_session

    api, ticket = merged_ticket(tmp_path, repo)
    late = api.task_create("Late fix", ticket=ticket)["task"]
    assert api.ticket_show(ticket)["status"] == "open"

    synced = run_cli("publish", "sync", "--json", cwd=repo)
    assert synced.code == 0 and synced.json["merged"] == [], synced.out
    before = git("rev-parse", "refs/lanes/ledger", cwd=repo)
    with pytest.raises(Refused) as refused:
        api.close_ticket_on_merge(ticket)
    assert refused.value.code == "ticket_reopened" and "1 of 2 tasks done" in refused.value.message

    async def scenario() -> dict:
        async with mcp_session(repo, "--agent", "pub-1", "--toolsets", "publisher") as session:
            return await fails(session, "close_ticket_on_merge", ticket_id=ticket)

    error = anyio.run(scenario)
    assert (error["reason"], error["exit_code"]) == ("ticket_reopened", 1), error
    assert git("rev-parse", "refs/lanes/ledger", cwd=repo) == before
    assert api.ticket_show(ticket)["status"] == "open" and api.task_show(late)["status"] == "open"
