"""`task done` on a ticket's last task says the ticket is ready, as the ticket's own rule has it (every task
done). It used to add "`git lanes publish TICKET`" whether or not anything had been integrated, and publish
then refused (`nothing_integrated`), or, for an integration lane holding nothing the trunk lacks, pushed a
branch with no commits to review. Now both take the same rule from the domain: task done says the ticket has
nothing to publish yet, with publish's own message and hint, and publish refuses such a ticket the same way."""

from __future__ import annotations

from pathlib import Path

from conftest import git, run_cli, workspace
from integration_helpers import claimed_task, with_forge, work

from git_lanes.api import Lanes


def worked_ticket(repo: Path) -> tuple[Lanes, str, str]:
    """A ticket with one task claimed by coder-1 in lane `one`, where a change is committed."""
    api = Lanes(repo)
    ticket = api.ticket_open("Login")["ticket"]
    task, ws = claimed_task(api, "coder-1", "one", "Login", ticket)
    work(api, "coder-1", ws, {"login.py": "login\n"})
    return api, ticket, task


def publish_refusal(repo: Path, ticket: str) -> dict:
    refused = run_cli("publish", ticket[:6], "--json", cwd=repo)
    assert refused.code == 1, (refused.out, refused.err)
    assert refused.json["error"] == "nothing_integrated"
    return refused.json


def test_a_ticket_done_with_no_lane_is_ready_with_nothing_to_publish_in_task_done_and_publish(tmp_path, repo):
    with_forge(tmp_path, repo)
    api = Lanes(repo)
    ticket = api.ticket_open("Docs")["ticket"]
    task = api.task_create("Write it", ticket=ticket)["task"]
    done = run_cli("task", "done", task[:8], "--json", cwd=repo)
    assert done.code == 0, done.err
    assert done.json["ticket_ready"] == ticket
    unpublishable = done.json["ticket_unpublishable"]
    refused = publish_refusal(repo, ticket)
    assert (unpublishable["code"], unpublishable["message"], unpublishable["hint"]) == \
        (refused["error"], refused["message"], refused["hint"])
    assert api.ticket_show(ticket)["status"] == "ready"  # the ticket's rule: every task is done

    text = run_cli("task", "done", api.task_create("More", ticket=ticket)["task"][:8], cwd=repo)
    assert text.code == 0, text.err
    assert f"ticket {ticket[:8]} is ready" in text.out and "nothing to publish" in text.out, text.out
    assert f"git lanes publish {ticket[:8]}" not in text.out
    assert f"git lanes lane create tickets/{ticket[:8]}" in text.out


def test_a_task_done_with_no_integrate_leaves_its_ticket_with_nothing_to_publish(tmp_path, repo):
    with_forge(tmp_path, repo)
    api, ticket, task = worked_ticket(repo)
    done = api.task_done(task, "coder-1", integrate=False).to_dict()
    assert done["ticket_ready"] == ticket and done["ticket_unpublishable"]["code"] == "nothing_integrated"


def test_a_lane_with_no_changes_integrates_nothing_and_publish_pushes_no_empty_branch(tmp_path, repo):
    forge = with_forge(tmp_path, repo)
    api = Lanes(repo)
    ticket = api.ticket_open("Nothing")["ticket"]
    task, _ = claimed_task(api, "coder-1", "idle", "Nothing yet", ticket)
    done = run_cli("task", "done", task[:8], "--agent", "coder-1", "--json", cwd=repo)
    assert done.code == 0, done.err
    assert done.json["integrated"]["status"] == "up_to_date"  # the lane held nothing new
    unpublishable = done.json["ticket_unpublishable"]
    refused = publish_refusal(repo, ticket)
    assert (unpublishable["code"], unpublishable["message"], unpublishable["hint"]) == \
        (refused["error"], refused["message"], refused["hint"])
    lane = f"tickets/{ticket[:8]}"
    assert "holds nothing the trunk lacks" in refused["message"]
    assert f"git lanes promote LANE --into {lane}" in refused["hint"]
    assert git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=forge).split() == ["refs/heads/main"]

    # the hint, followed, publishes
    (workspace(repo, "idle") / "docs.md").write_text("docs\n")
    api.commit("docs", "coder-1", lane="idle", auto_accept=True)
    assert run_cli("promote", "idle", "--into", lane, "--auto-accept", cwd=repo).code == 0
    published = run_cli("publish", ticket[:6], "--json", cwd=repo)
    assert published.code == 0 and published.json["pushed"], published.err


def test_a_ticket_with_integrated_work_is_ready_to_publish(tmp_path, repo):
    with_forge(tmp_path, repo)
    api, ticket, task = worked_ticket(repo)
    done = run_cli("task", "done", task[:8], "--agent", "coder-1", cwd=repo)
    assert done.code == 0, done.err
    assert f"ticket {ticket[:8]} is ready: `git lanes publish {ticket[:8]}`" in done.out
    assert "ticket_unpublishable" not in api.task_show(task)  # nothing of it is stored on the task


def test_the_mcp_task_done_says_the_ticket_has_nothing_to_publish_in_its_own_words(repo):
    import anyio
    from mcp_helpers import call, mcp_session

    api = Lanes(repo)
    ticket = api.ticket_open("Docs")["ticket"]
    task = api.task_create("Write it", ticket=ticket)["task"]

    async def scenario() -> dict:
        async with mcp_session(repo, "--agent", "coder-1") as session:
            return await call(session, "task_done", task_id=task)

    done = anyio.run(scenario)
    assert done["ticket_ready"] == ticket and done["ticket_unpublishable"]["code"] == "nothing_integrated"
    assert "promote(" in done["ticket_unpublishable"]["hint"], done["ticket_unpublishable"]["hint"]


def test_publish_status_tells_a_ready_ticket_with_nothing_to_publish_from_one_ready_to_publish(tmp_path, repo):
    """`publish status` counted both as "ready" and said no more, though publish refuses the first."""
    with_forge(tmp_path, repo)
    api, worked, task = worked_ticket(repo)
    api.task_done(task, "coder-1")
    empty = api.ticket_open("Docs")["ticket"]
    api.task_done(api.task_create("Write it", ticket=empty)["task"])
    status = run_cli("publish", "status", "--json", cwd=repo)
    assert status.code == 0, status.err
    rows = {row["ticket"]: row for row in status.json["ready"]}
    assert rows[worked]["unpublishable"] is None
    assert rows[empty]["unpublishable"] == {key: publish_refusal(repo, empty)[name] for key, name in
                                            (("code", "error"), ("message", "message"), ("hint", "hint"))}
    text = run_cli("publish", "status", cwd=repo).out
    [line] = [line for line in text.splitlines() if line.startswith(empty[:8])]
    assert "nothing to publish" in line, text
    assert "nothing to publish" not in [line for line in text.splitlines() if line.startswith(worked[:8])][0]
