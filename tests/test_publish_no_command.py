"""Publishing with no `[publish] pr_command`: the branch is pushed and no pull request is opened, and every
face and the board say so. It used to post `pr_opened` ("pull request opened from …") and report status
`pr_opened`, so a person reading the board looked for a pull request nobody had opened; and once the command
was set, publishing again said "already at" and still opened none."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import git, run_cli
from integration_helpers import claimed_task, with_forge, work

from git_lanes.api import Lanes

PR_SCRIPT = "import sys\nprint('https://forge.example/acme/app/pull/7')\n"


def ready_ticket(tmp_path: Path, repo: Path) -> tuple[Lanes, str, Path]:
    """A ticket whose one task integrated a change, and a bare forge holding the trunk as `origin`."""
    forge = with_forge(tmp_path, repo)
    api = Lanes(repo)
    ticket = api.ticket_open("Login")["ticket"]
    task, ws = claimed_task(api, "coder-1", "one", "Login", ticket)
    work(api, "coder-1", ws, {"login.py": "login\n"})
    assert api.task_done(task, "coder-1")["ticket_ready"] == ticket
    return api, ticket, forge


def publish_posts(api: Lanes) -> list[dict]:
    return [p for p in api.board_read(None, limit=100)["posts"] if p["kind"] != "ticket_ready"]


def test_publishing_with_no_pr_command_says_the_branch_was_pushed_and_no_pull_request_opened(tmp_path, repo):
    api, ticket, forge = ready_ticket(tmp_path, repo)
    branch = f"lanes/ticket/{ticket[:8]}"

    published = run_cli("publish", ticket[:6], "--json", cwd=repo)
    assert published.code == 0, published.err
    result = published.json
    assert (result["status"], result["pushed"], result["pull_request"], result["url"], result["command"]) == \
        ("branch_published", True, False, None, None)
    assert "pr_command" in result["hint"] and f"from {branch} into main" in result["hint"]
    assert git("rev-parse", f"refs/heads/{branch}", cwd=forge).strip() == result["head"]
    [post] = publish_posts(api)
    assert post["kind"] == "branch_published" and post["seq"] == result["post"]
    assert "no pull request opened" in post["text"] and "pull request opened" not in \
        post["text"].replace("no pull request opened", "")
    publication = api.publish_status()["published"][0]["publication"]
    assert (publication["branch"], publication["pull_request"]) == (branch, False)

    # the CLI's text says the same, and publishing again with nothing new changes nothing
    again = run_cli("publish", ticket[:6], cwd=repo)
    assert again.code == 0 and "already at" in again.out and "no pull request opened" in again.out, again.out
    assert "pr_command" in again.out  # still the way to have one opened
    status = run_cli("publish", "status", cwd=repo)
    assert "no pull request" in status.out, status.out


def test_the_text_output_of_a_publish_with_no_pr_command_names_no_pull_request(tmp_path, repo):
    api, ticket, forge = ready_ticket(tmp_path, repo)
    published = run_cli("publish", ticket[:6], cwd=repo)
    assert published.code == 0, published.err
    assert "pr_opened" not in published.out and "no pull request opened" in published.out, published.out
    assert "pr_command" in published.out


def test_setting_the_pr_command_after_a_push_opens_the_pull_request_on_the_next_publish(tmp_path, repo):
    """The hint says to set the command and publish again: doing so runs it (it used to say "already at")."""
    api, ticket, forge = ready_ticket(tmp_path, repo)
    assert api.publish(ticket)["status"] == "branch_published"
    script = tmp_path / "pr.py"
    script.write_text(PR_SCRIPT)
    (repo / ".lanes.toml").write_text(f"[publish]\npr_command = {json.dumps([sys.executable, str(script)])}\n")
    held = api.commit("publishing settings", "me", lane="main", auto_accept=True)
    api.accept(held["id"])

    opened = api.publish(ticket)
    assert (opened["status"], opened["pushed"], opened["pull_request"], opened["url"]) == \
        ("pr_opened", False, True, "https://forge.example/acme/app/pull/7")
    assert "hint" not in opened
    assert [p["kind"] for p in publish_posts(api)] == ["branch_published", "pr_opened"]
    assert api.publish(ticket)["status"] == "unchanged"


def test_a_re_publish_with_no_pr_command_updates_no_pull_request_it_never_opened(tmp_path, repo):
    """More work on a ticket pushed with no command: the push is recorded as such again, not `pr_updated`."""
    api, ticket, forge = ready_ticket(tmp_path, repo)
    assert api.publish(ticket)["status"] == "branch_published"
    task, ws = claimed_task(api, "coder-2", "two", "More login", ticket)
    work(api, "coder-2", ws, {"more.py": "more\n"})
    api.task_done(task, "coder-2")
    again = api.publish(ticket, base="main")
    assert (again["status"], again["pushed"], again["pull_request"]) == ("branch_published", True, False)
    assert [p["kind"] for p in publish_posts(api)] == ["branch_published", "branch_published"]


def test_a_pull_request_recorded_with_pr_after_a_push_is_opened_and_then_updated(tmp_path, repo):
    """`--pr URL` records the pull request a person opened by hand from the pushed branch; the next push of
    that branch updates it (the forge's pull request follows its branch), command or not."""
    api, ticket, forge = ready_ticket(tmp_path, repo)
    api.publish(ticket)
    recorded = run_cli("publish", ticket[:6], "--pr", "https://forge.example/acme/app/pull/9", "--json", cwd=repo)
    assert recorded.code == 0, recorded.err
    assert (recorded.json["status"], recorded.json["pull_request"]) == ("pr_opened", True)
    assert "hint" not in recorded.json
    task, ws = claimed_task(api, "coder-2", "two", "More login", ticket)
    work(api, "coder-2", ws, {"more.py": "more\n"})
    api.task_done(task, "coder-2")
    updated = api.publish(ticket)
    assert (updated["status"], updated["url"], updated["pull_request"]) == \
        ("pr_updated", "https://forge.example/acme/app/pull/9", True)
    assert "hint" not in updated  # no "open a pull request" advice for one that is open


def test_the_mcp_tool_reports_a_publish_with_no_pr_command_as_the_cli_does(tmp_path, repo):
    import anyio
    from mcp_helpers import call, mcp_session

    api, ticket, forge = ready_ticket(tmp_path, repo)

    async def scenario() -> dict:
        async with mcp_session(repo, "--agent", "pub-1", "--toolsets", "publisher") as session:
            return await call(session, "publish_ticket", ticket_id=ticket[:6])

    published = anyio.run(scenario)
    assert (published["status"], published["pull_request"], published["url"]) == ("branch_published", False, None)
    assert "pr_command" in published["hint"]


def test_a_branch_published_with_no_pull_request_is_closed_as_a_branch_merged_not_a_pull_request(tmp_path, repo):
    """`publish sync` posted `pr_merged` for it, a pull request nobody opened; one recorded with `--pr` is."""
    api, ticket, forge = ready_ticket(tmp_path, repo)
    api.publish(ticket)
    other = api.ticket_open("Other")["ticket"]
    task, ws = claimed_task(api, "coder-2", "two", "Other", other)
    work(api, "coder-2", ws, {"other.py": "other\n"})
    api.task_done(task, "coder-2")
    api.publish(other)
    api.publish(other, pr="https://forge.example/acme/app/pull/3")
    git("push", "-q", str(forge), f"refs/lanes/heads/tickets/{ticket[:8]}:refs/heads/main", cwd=repo)
    git("push", "-q", str(forge), f"refs/lanes/heads/tickets/{other[:8]}:refs/heads/release", cwd=repo)
    api.publish(other, base="release")
    synced = run_cli("publish", "sync", "--json", cwd=repo)
    assert synced.code == 0, synced.err
    assert {m["ticket"]: m["kind"] for m in synced.json["merged"]} == {ticket: "branch_merged", other: "pr_merged"}
    kinds = {p["text"].split()[1]: p["kind"] for p in publish_posts(api) if p["kind"].endswith("_merged")}
    assert kinds == {ticket[:8]: "branch_merged", other[:8]: "pr_merged"}
