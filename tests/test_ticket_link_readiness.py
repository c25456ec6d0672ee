"""What linking a task did to its tickets: linking a done task could make a ticket ready, moving a task out
of one could leave it ready (or empty), and an open task joining a ready or published ticket opened it again,
and `ticket link` said only "task X is in ticket Y" (the board had a ticket_ready post nobody was told of, and
a published ticket was reopened without a word, so the next publish was refused as not ready)."""

from __future__ import annotations

from conftest import run_cli

from git_lanes.api import Lanes


def test_ticket_link_says_which_tickets_it_made_ready_or_opened_again(repo):
    api = Lanes(repo)
    docs = api.ticket_open("Docs")["ticket"]
    login = api.ticket_open("Login")["ticket"]
    done = api.task_create("Write it")["task"]
    api.task_done(done)
    linked = run_cli("ticket", "link", docs[:8], done[:8], "--json", cwd=repo)
    assert linked.code == 0, linked.err
    assert (linked.json["ready"], linked.json.get("reopened", [])) == ([docs], [])
    assert api.ticket_show(docs)["status"] == "ready"

    late = api.task_create("Late fix")["task"]
    joined = run_cli("ticket", "link", docs[:8], late[:8], cwd=repo)
    assert joined.code == 0, joined.err
    assert joined.out.splitlines() == [f"task {late[:8]} is in ticket {docs[:8]}",
                                       f"ticket {docs[:8]} is open again: task {late[:8]} is not done"]
    moved = run_cli("ticket", "link", login[:8], late[:8], "--json", cwd=repo)
    assert moved.code == 0, moved.err
    assert (moved.json["previous"], moved.json["ready"]) == (docs, [docs])  # Docs is back to its done task
    again = run_cli("ticket", "link", login[:8], done[:8], cwd=repo)  # Docs is left with no task
    assert f"ticket {docs[:8]} is open again: it has no task left" in again.out, again.out
    quiet = run_cli("ticket", "link", login[:8], done[:8], "--json", cwd=repo)
    assert "ready" not in quiet.json and "reopened" not in quiet.json and quiet.json["linked"] is False
