"""`task done` integrates the task's lane through the merge gate: into the ticket's integration lane, or into
the trunk without a ticket; a collision or a failing gate sends the task back to its owner as needs_review,
with a handoff post naming the paths and the ways on, and wakes the owner's `wait`."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, run_cli
from integration_helpers import claimed_task, work

from git_lanes.api import Lanes
from git_lanes.errors import Conflict, GateFailed, Refused
from git_lanes.mcp import advice as mcp_advice


def tree_file(repo: Path, rev: str, path: str) -> str:
    return git("show", f"{rev}:{path}", cwd=repo)


def test_a_task_without_a_ticket_lands_on_the_trunk(api: Lanes):
    task, ws = claimed_task(api, "coder-1", "feature/a", "Add a")
    work(api, "coder-1", ws, {"a.txt": "a\n"})
    done = api.task_done(task, "coder-1")
    assert done["integrated"]["into"] == "main" and done["integrated"]["status"] == "accepted"
    assert (api.root / "a.txt").read_text() == "a\n"  # the main worktree follows the trunk
    assert api.task_show(task)["integrated"]["into"] == "main"


def test_no_integrate_only_marks_it_done(api: Lanes):
    task, ws = claimed_task(api, "coder-1", "feature/a", "Add a")
    work(api, "coder-1", ws, {"a.txt": "a\n"})
    head = git("rev-parse", "main", cwd=api.root)
    done = api.task_done(task, "coder-1", integrate=False)
    assert "integrated" not in done
    assert git("rev-parse", "main", cwd=api.root) == head
    assert api.task_show(task)["status"] == "done"


def test_a_ticket_collects_its_tasks_and_a_collision_goes_back_to_its_owner(api: Lanes):
    ticket = api.ticket_open("Login")["ticket"]
    lane = f"tickets/{ticket[:8]}"
    first, ws1 = claimed_task(api, "coder-1", "one", "One", ticket)
    second, ws2 = claimed_task(api, "coder-2", "two", "Two", ticket)
    work(api, "coder-1", ws1, {"src/app.py": "one\n"})
    work(api, "coder-2", ws2, {"src/app.py": "two\n", "b.txt": "b\n"})
    trunk = git("rev-parse", "main", cwd=api.root)

    assert api.task_done(first, "coder-1")["integrated"]["created_lane"] is True
    assert tree_file(api.root, f"refs/lanes/heads/{lane}", "src/app.py") == "one\n"
    assert git("rev-parse", "main", cwd=api.root) == trunk  # the ticket's work waits on its own lane
    integrated = git("rev-parse", f"refs/lanes/heads/{lane}", cwd=api.root)

    with pytest.raises(Conflict) as caught:
        api.task_done(second, "coder-2")
    assert caught.value.code == "collision"
    assert "src/app.py" in caught.value.message and "needs_review" in caught.value.message
    # the ways on, as commands every face translates: the MCP server names its tools where it has them
    assert f"  rerun: `git lanes lane reset two --onto {lane}`" in caught.value.hint
    told = mcp_advice.advise(caught.value.hint, {"promote", "task_done"})
    assert f'`promote(lane="two", into="{lane}", force=true, auto_accept=true)`' in told
    assert f'`task_done(task_id="{second[:8]}")`' in told and "`git lanes lane reset" in told
    assert git("rev-parse", f"refs/lanes/heads/{lane}", cwd=api.root) == integrated  # nothing moved
    shown = api.task_show(second)
    assert shown["status"] == "needs_review" and shown["owner"] == "coder-2"
    woke = api.wait("coder-2", timeout=0)
    assert woke["reason"] == "needs_review"
    assert woke["wakes"][0]["paths"] == ["src/app.py"]
    post = woke["posts"][0]
    assert post["kind"] == "handoff" and "src/app.py" in post["text"]
    assert f"git lanes lane reset two --onto {lane}" in post["text"]

    # the rerun: start again from the integration lane, redo the work on top of what landed, finish again
    api.lane_reset("two", lane)
    work(api, "coder-2", ws2, {"src/app.py": "one\ntwo\n", "b.txt": "b\n"})
    done = api.task_done(second, "coder-2")
    assert done["integrated"]["status"] == "accepted" and done["ticket_ready"] == ticket
    assert tree_file(api.root, f"refs/lanes/heads/{lane}", "src/app.py") == "one\ntwo\n"
    posts = api.board_read(None, limit=50)["posts"]
    assert [p for p in posts if p["kind"] == "ticket_ready"]


def test_a_gate_failing_on_the_merged_tree_sends_the_task_back(api: Lanes):
    # each lane passes alone; together they do not, which only the merged tree shows
    (api.root / ".lanes.toml").write_text('[[gate]]\nname = "not-both"\ncommand = "! test -e a.txt -a -e b.txt"\n')
    held = api.commit("gates", "me", lane="main", auto_accept=True)  # .lanes.toml waits for a person
    api.accept(held["id"])
    first, ws1 = claimed_task(api, "coder-1", "feature/a", "A")
    second, ws2 = claimed_task(api, "coder-2", "feature/b", "B")
    work(api, "coder-1", ws1, {"a.txt": "a\n"})
    work(api, "coder-2", ws2, {"b.txt": "b\n"})
    api.task_done(first, "coder-1")
    trunk = git("rev-parse", "main", cwd=api.root)
    with pytest.raises(GateFailed) as caught:
        api.task_done(second, "coder-2")
    assert caught.value.details["sent_back"]["gates"] == ["not-both"]
    assert git("rev-parse", "main", cwd=api.root) == trunk
    assert api.task_show(second)["status"] == "needs_review"
    woke = api.wait("coder-2", timeout=0)
    assert woke["reason"] == "needs_review" and "not-both" in woke["posts"][0]["text"]


def test_cli_done_prints_the_integration_and_exit_codes(repo: Path):
    api = Lanes(repo)
    task, ws = claimed_task(api, "coder-1", "feature/a", "Add a")
    (ws / "README.md").write_text("lane\n")
    api.commit("lane edit", "coder-1", cwd=ws, auto_accept=True)
    (repo / "README.md").write_text("trunk\n")
    api.commit("trunk edit", "me", lane="main", auto_accept=True)
    result = run_cli("task", "done", task[:6], "--agent", "coder-1", "--json", cwd=repo)
    assert result.code == 3, result.err
    assert result.json["error"] == "collision" and result.json["sent_back"]["status"] == "needs_review"
    assert "README.md" in result.err and "lane reset feature/a --onto main" in result.err
    closed = run_cli("task", "done", task[:6], "--agent", "coder-1", "--no-integrate", cwd=repo)
    assert closed.code == 0 and "done" in closed.out


def test_cli_done_says_which_pending_proposals_it_left_out_as_promote_does(repo: Path):
    """task done integrates the lane's accepted head only; --json listed the proposals it left out
    (`left_pending`) but the text said nothing, so the owner took its pending work for integrated."""
    api = Lanes(repo)
    task, ws = claimed_task(api, "coder-1", "feature/a", "Add a")
    work(api, "coder-1", ws, {"a.txt": "accepted\n"})
    (ws / "b.txt").write_text("pending\n")
    pending = api.commit("awaiting a decision", "coder-1", cwd=ws).id
    result = run_cli("task", "done", task[:6], "--agent", "coder-1", cwd=repo)
    assert result.code == 0, result.err
    assert f"feature/a's pending proposals {pending[:8]} are not included" in result.out, result.out


def test_the_merge_queue_integrates_tasks_rerun_since_they_were_sent_back(api: Lanes):
    first, ws1 = claimed_task(api, "coder-1", "one", "One")
    second, ws2 = claimed_task(api, "coder-2", "two", "Two")
    work(api, "coder-1", ws1, {"src/app.py": "one\n"})
    work(api, "coder-2", ws2, {"src/app.py": "two\n"})
    api.task_done(first, "coder-1")
    with pytest.raises(Conflict):
        api.task_done(second, "coder-2")
    assert api.process_merge_queue()["waiting"] == [{"task": second, "lane": "two", "owner": "coder-2"}]
    api.lane_reset("two", "main")
    work(api, "coder-2", ws2, {"src/app.py": "one\ntwo\n"})
    processed = api.process_merge_queue()
    assert processed["integrated"] == [{"task": second, "lane": "two", "into": "main", "ticket_ready": None}]
    assert api.task_show(second)["status"] == "done"
    assert (api.root / "src" / "app.py").read_text() == "one\ntwo\n"


def test_an_integration_held_for_a_person_leaves_the_task_open(api: Lanes):
    task, ws = claimed_task(api, "coder-1", "feature/cfg", "Tune the gates")
    (ws / ".lanes.toml").write_text("# tuned\n")
    api.commit("tune", "coder-1", cwd=ws)
    api.accept(api.history(lane="feature/cfg")["transitions"][0]["id"])  # a person, on the lane
    with pytest.raises(Refused) as held:
        api.task_done(task, "coder-1")
    assert held.value.code == "integration_held" and "protected paths" in held.value.message
    assert api.task_show(task)["status"] == "claimed"
    api.accept(held.value.details["transition"]["id"])  # the person accepts the promotion into the trunk
    assert api.task_done(task, "coder-1")["integrated"]["status"] == "up_to_date"


def test_task_done_is_one_operation_that_one_undo_takes_back(api: Lanes):
    ticket = api.ticket_open("Login")["ticket"]
    task, ws = claimed_task(api, "coder-1", "one", "One", ticket)
    work(api, "coder-1", ws, {"src/app.py": "one\n"})
    api.task_done(task, "coder-1")
    newest = api.op_log(1)[0]
    assert newest["description"] == f"task done {task[:8]}" and newest["kind"] == "lanes"
    undone = api.undo()  # the whole command: integration lane, promotion, the task marked done
    assert undone["undone"] == newest["id"]
    assert git("rev-parse", "--verify", "-q", f"refs/lanes/heads/tickets/{ticket[:8]}", cwd=api.root, check=False) == ""
    assert api.task_show(task)["status"] == "claimed"
    api.undo()  # redo: the integration lane comes back as it was, with no workspace
    assert api.task_show(task)["status"] == "done"
    assert not (api.root / ".lanes" / "workspaces" / "tickets").exists()


def test_a_collision_on_a_file_name_that_is_not_utf8_still_sends_the_task_back(api: Lanes, repo):
    """The review op carried the colliding paths as Python holds a Latin-1 name (lone surrogates), which the
    ledger's UTF-8 JSON cannot write: `task done` failed as an internal error (exit 6) instead of naming
    the collision, and the task was not sent back."""
    import os

    latin = os.fsdecode(b"caf\xe9.txt")
    first, ws1 = claimed_task(api, "coder-1", "one", "One")
    second, ws2 = claimed_task(api, "coder-2", "two", "Two")
    for agent, ws in (("coder-1", ws1), ("coder-2", ws2)):
        (ws / latin).write_text(f"{agent}\n")
        api.commit("Name a file in Latin-1", agent, cwd=ws, auto_accept=True)
    api.task_done(first, "coder-1")
    with pytest.raises(Conflict) as caught:
        api.task_done(second, "coder-2")
    assert caught.value.code == "collision"
    assert [c["path"] for c in caught.value.details["collisions"]] == [latin]
    shown = api.task_show(second)
    assert shown["status"] == "needs_review" and shown["review"]["paths"] == ["caf\\xe9.txt"]
    [post] = api.board_read("coder-2", unread_only=True)["posts"]
    assert "changed on both sides: caf\\xe9.txt" in post["text"]  # the bytes named as `quoted` names them
    cli = run_cli("task", "show", second, "--json", cwd=repo)
    assert cli.code == 0 and cli.json["review"]["paths"] == ["caf\\xe9.txt"]


def test_claiming_a_task_one_holds_with_another_lane_moves_its_work_there(api: Lanes, repo: Path):
    """`task claim TASK --lane late` by the task's own owner said "already holds" and kept the lane the first
    claim took; `task done` then integrated that lane, not the one the work was in."""
    task = api.task_create("Late fix")["task"]
    api.lane_create("first")
    api.task_claim(task, "coder-1", lane="first")
    api.lane_create("late")
    again = run_cli("task", "claim", task[:8], "--agent", "coder-1", "--lane", "late", "--json", cwd=repo)
    assert again.code == 0, again.err
    assert again.json["already"] is True and again.json["version"] == 3
    assert api.task_show(task)["lane"] == "late"
    assert run_cli("task", "claim", task[:8], "--agent", "coder-1", "--lane", "late", "--json",
                   cwd=repo).json["version"] == 3  # the same lane again changes nothing
    work(api, "coder-1", repo / ".lanes" / "workspaces" / "late", {"late.py": "late\n"})
    assert api.task_done(task, "coder-1")["integrated"]["lane"] == "late"
    assert tree_file(repo, "main", "late.py") == "late\n"


def test_task_done_whose_lane_is_gone_changes_nothing_and_says_how_to_finish_it(api: Lanes, repo: Path):
    """A task whose lane does not exist (deleted, or a dispatched feature's not made yet) failed `task done`
    with "no lane named ..." after making its ticket's integration lane and logging a refused operation:
    a partial write for bad input."""
    ticket = api.ticket_open("Login")["ticket"]
    task, _ = claimed_task(api, "coder-1", "gone", "Login", ticket)
    api.lane_delete("gone", force=True)
    before = git("for-each-ref", "refs/lanes/heads", "refs/lanes/oplog", cwd=repo)
    result = run_cli("task", "done", task[:8], "--agent", "coder-1", "--json", cwd=repo)
    assert result.code == 1, result.err
    assert result.json["error"] == "unknown_lane" and "gone" in result.json["message"]
    assert f"git lanes task done {task[:8]} --no-integrate" in result.json["hint"]
    assert git("for-each-ref", "refs/lanes/heads", "refs/lanes/oplog", cwd=repo) == before
    assert api.task_show(task)["status"] == "claimed"
