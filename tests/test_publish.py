"""From done tasks to a merged pull request, against a real remote (`git daemon` on loopback): a ticket's
tasks integrate (one collides, goes back for review, is rerun and integrates), `publish` pushes the
integration lane and runs the PR command under a lock, and `publish sync` sees a squash merge and closes it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, run_cli
from gitserver import GitServer, clone, make_origin, server  # noqa: F401 (fixture)
from integration_helpers import claimed_task, work

from git_lanes.api import Lanes
from git_lanes.errors import Conflict

PR_SCRIPT = """
import json, os, pathlib, signal, sys, time
spool = pathlib.Path(sys.argv[1])
calls = spool / "calls.jsonl"
with calls.open("a") as out:
    out.write(json.dumps(sys.argv[2:]) + "\\n")
number = len(calls.read_text().splitlines())
if (spool / "block").exists():
    (spool / f"waiting-{number}").write_text(str(os.getpid()))
    for _ in range(12000):  # at most two minutes: the test releases it long before
        if (spool / "release").exists():
            break
        time.sleep(0.01)
print("Creating pull request for", sys.argv[2], "into", sys.argv[3])
print(f"https://forge.example/acme/project/pull/{number}", flush=True)
if (spool / "kill-publisher").exists():  # the forge opened it; the publisher dies before recording it
    os.kill(os.getppid(), signal.SIGKILL)
"""


def wait_for(path: Path, process: subprocess.Popen | None = None) -> None:
    """Wait until `path` exists (the PR command got that far); fail at once if the publisher ended first."""
    for _ in range(6000):
        if path.exists():
            return
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the publisher ended ({process.returncode}) before {path.name}: "
                                 f"{process.stderr.read() if process.stderr else ''}")
        time.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


def publisher(machine: Path, ticket: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "git_lanes", "publish", ticket, "--json"], cwd=machine,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def project(tmp_path: Path, server: GitServer):  # noqa: F811
    """A machine whose trunk carries a `[publish]` PR command (a script recording its arguments and printing
    a URL), synced to a bare repository on the git server."""
    url = server.bare("project")
    machine = make_origin(tmp_path, url)
    spool = tmp_path / "spool"
    spool.mkdir()
    script = tmp_path / "pr.py"
    script.write_text(PR_SCRIPT)
    command = [sys.executable, str(script), str(spool), "{branch}", "{base}"]
    (machine / ".lanes.toml").write_text(f"[publish]\npr_command = {json.dumps(command)}\n")
    api = Lanes(machine)
    held = api.commit("publishing settings", "me", lane="main", auto_accept=True)  # waits for a person
    api.accept(held["id"])
    api.sync()
    return api, machine, spool, server, url


def reviewer_with(tmp_path: Path, url: str, branch: str) -> Path:
    """A reviewer's clone of the forge with the published `branch` fetched (FETCH_HEAD)."""
    reviewer = clone(tmp_path, url, "reviewer")
    git("fetch", "--quiet", "origin", branch, cwd=reviewer)
    return reviewer


def integrated_ticket(api: Lanes) -> tuple[str, str]:
    """A ticket with three tasks in three lanes, two colliding on src/app.py, all integrated in the end."""
    ticket = api.ticket_open("Login flow")["ticket"]
    lane = f"tickets/{ticket[:8]}"
    one, ws1 = claimed_task(api, "coder-1", "one", "Session store", ticket, ("one/**",))
    two, ws2 = claimed_task(api, "coder-2", "two", "Login form", ticket, ("two/**",))
    three, ws3 = claimed_task(api, "coder-3", "three", "Docs", ticket, ("three/**",))
    work(api, "coder-1", ws1, {"src/app.py": "session\n"})
    work(api, "coder-2", ws2, {"src/app.py": "form\n", "form.html": "<form>\n"})
    work(api, "coder-3", ws3, {"docs.md": "login\n"})

    assert api.task_done(one, "coder-1")["integrated"]["into"] == lane
    assert api.task_done(three, "coder-3")["integrated"]["status"] == "accepted"
    with pytest.raises(Conflict) as collided:
        api.task_done(two, "coder-2")
    assert [c["path"] for c in collided.value.details["collisions"]] == ["src/app.py"]
    assert api.task_show(two)["status"] == "needs_review"
    woke = api.wait("coder-2", timeout=0)
    assert woke["reason"] == "needs_review"
    handoff = woke["posts"][0]
    assert handoff["kind"] == "handoff" and "src/app.py" in handoff["text"]
    assert f"git lanes lane reset two --onto {lane}" in handoff["text"]

    api.lane_reset("two", lane)  # the rerun, from what landed
    work(api, "coder-2", ws2, {"src/app.py": "session\nform\n", "form.html": "<form>\n"})
    done = api.task_done(two, "coder-2")
    assert done["integrated"]["status"] == "accepted" and done["ticket_ready"] == ticket
    assert any(p["kind"] == "ticket_ready" and ticket[:8] in p["text"]
               for p in api.board_read(None, limit=100)["posts"])
    return ticket, lane


def test_a_ticket_goes_from_done_tasks_to_a_squash_merged_pull_request(tmp_path, project):
    api, machine, spool, server, url = project
    ticket, lane = integrated_ticket(api)
    head = git("rev-parse", f"refs/lanes/heads/{lane}", cwd=machine).strip()
    branch = f"lanes/ticket/{ticket[:8]}"

    # two publishers at once: the second finds the first holding the lock (exit 3, naming it)
    (spool / "block").write_text("")
    first = publisher(machine, ticket[:6])
    wait_for(spool / "waiting-1", first)
    second = run_cli("publish", ticket[:6], "--json", "--agent", "publisher-2", cwd=machine)
    assert second.code == 3, second.err
    assert second.json["error"] == "publish_locked" and second.json["holder"] == "Test"
    assert "being published by Test" in second.err
    (spool / "release").write_text("")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    published = json.loads(out)
    assert published["status"] == "pr_opened" and published["pushed"] is True
    assert published["url"] == "https://forge.example/acme/project/pull/1"
    assert [json.loads(line) for line in (spool / "calls.jsonl").read_text().splitlines()] == [[branch, "main"]]
    assert git("rev-parse", f"refs/heads/{branch}", cwd=server.path("project")).strip() == head
    opened = [p for p in api.board_read(None, limit=100)["posts"] if p["kind"] == "pr_opened"]
    assert len(opened) == 1 and published["url"] in opened[0]["text"]

    status = run_cli("publish", "status", "--json", cwd=machine)
    assert status.code == 0 and status.json["counts"]["published"] == 1
    assert status.json["published"][0]["publication"]["url"] == published["url"]
    assert run_cli("publish", ticket[:6], "--json", cwd=machine).json["status"] == "unchanged"

    # a person squash-merges the pull request on the forge, and main moves on after it
    reviewer = reviewer_with(tmp_path, url, branch)
    git("merge", "--squash", "--quiet", "FETCH_HEAD", cwd=reviewer)
    git("commit", "--quiet", "-m", "Login flow (#1)", cwd=reviewer)
    (reviewer / "later.txt").write_text("later\n")
    git("add", "later.txt", cwd=reviewer)
    git("commit", "--quiet", "-m", "later work", cwd=reviewer)
    git("push", "--quiet", "origin", "main", cwd=reviewer)
    assert git("merge-base", "--is-ancestor", head, "origin/main", cwd=reviewer, check=False) == ""

    synced = run_cli("publish", "sync", "--json", cwd=machine)
    assert synced.code == 0, synced.err
    assert [(m["ticket"], m["how"]) for m in synced.json["merged"]] == [(ticket, "tree")]
    assert api.ticket_show(ticket)["status"] == "closed"
    assert any(p["kind"] == "pr_merged" for p in api.board_read(None, limit=100)["posts"])
    assert git("rev-parse", "--verify", "--quiet", f"refs/lanes/heads/{lane}", cwd=machine, check=False) == ""
    assert not [c for c in api.claim_list() if c.get("task")]  # the tasks' claims went with it
    assert run_cli("publish", "sync", "--json", cwd=machine).json["merged"] == []  # once only


def test_a_dead_publishers_lock_lapses(project):
    api, machine, spool, server, url = project
    ticket, _ = integrated_ticket(api)
    (spool / "block").write_text("")
    doomed = publisher(machine, ticket[:6])
    wait_for(spool / "waiting-1", doomed)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=30)
    (spool / "block").unlink()
    status = api.publish_status()
    assert status["published"] == [] and status["ready"][0]["lock"]["lapsed"] is True  # the kill left it
    again = run_cli("publish", ticket[:6], "--json", cwd=machine)
    # not held by the dead publisher's lock; stopped by its PR command, which may still open a pull request
    assert again.code == 3 and again.json["error"] == "publish_interrupted", again.err
    again = run_cli("publish", ticket[:6], "--pr", "new", "--json", cwd=machine)
    assert again.code == 0, again.err
    assert again.json["status"] == "pr_opened"
    (spool / "release").write_text("")  # the killed publisher's command, still waiting, may finish now


def test_a_patch_id_finds_a_squash_merge_whose_paths_changed_again(tmp_path, project):
    api, machine, spool, server, url = project
    ticket, lane = integrated_ticket(api)
    assert api.publish(ticket)["status"] == "pr_opened"
    branch = f"lanes/ticket/{ticket[:8]}"
    reviewer = reviewer_with(tmp_path, url, branch)
    git("merge", "--squash", "--quiet", "FETCH_HEAD", cwd=reviewer)
    git("commit", "--quiet", "-m", "squashed", cwd=reviewer)
    (reviewer / "docs.md").write_text("login, revised\n")  # one of the ticket's paths, changed again since
    git("commit", "--quiet", "-am", "revise docs", cwd=reviewer)
    git("push", "--quiet", "origin", "main", cwd=reviewer)
    merged = api.publish_sync()["merged"]
    assert [(m["ticket"], m["how"]) for m in merged] == [(ticket, "patch_id")]


def test_publishing_refuses_what_is_not_ready_and_what_would_not_fast_forward(tmp_path, project):
    api, machine, spool, server, url = project
    ticket = api.ticket_open("Unfinished")["ticket"]
    api.task_create("not yet", ticket=ticket)
    refused = run_cli("publish", ticket[:6], cwd=machine)
    assert refused.code == 1 and "0 of 1 tasks done" in refused.err
    ticket, lane = integrated_ticket(api)
    for option in ("--remote", "--branch", "--base"):  # an empty value given is refused, not the default
        empty = run_cli("publish", ticket[:6], option, "", "--json", cwd=machine)
        assert empty.code == 1 and "Traceback" not in empty.err, (option, empty.err)
    assert not (spool / "calls.jsonl").exists()
    branch = f"lanes/ticket/{ticket[:8]}"
    other = clone(tmp_path, url, "other")
    git("push", "--quiet", "origin", f"main:refs/heads/{branch}", cwd=other)  # someone else's commits there
    (other / "theirs.txt").write_text("x\n")
    git("add", "theirs.txt", cwd=other)
    git("commit", "--quiet", "-m", "theirs", cwd=other)
    git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=other)
    before = git("rev-parse", f"refs/heads/{branch}", cwd=server.path("project"))
    rejected = run_cli("publish", ticket[:6], "--json", cwd=machine)
    assert rejected.code == 3 and rejected.json["error"] == "publish_rejected"
    assert git("rev-parse", f"refs/heads/{branch}", cwd=server.path("project")) == before
    assert not (spool / "calls.jsonl").exists()  # no pull request for a branch that did not move


def test_the_publisher_tools_take_a_ticket_from_lock_to_closed(tmp_path, project):
    import anyio
    from mcp_helpers import call, fails, mcp_session

    api, machine, spool, server, url = project
    ticket, lane = integrated_ticket(api)

    async def scenario():
        async with mcp_session(machine, "--agent", "pub-1", "--toolsets", "publisher,maintenance") as one, \
                mcp_session(machine, "--agent", "pub-2", "--toolsets", "publisher") as two:
            assert (await call(one, "publisher_status"))["counts"]["ready"] == 1
            lock = await call(one, "acquire_publish_lock", ticket_id=ticket[:6])
            error = await fails(two, "publish_ticket", ticket_id=ticket[:6])
            assert error["code"] == "conflict" and error["reason"] == "publish_locked"
            assert error["details"]["holder"] == "pub-1"
            assert (await call(one, "release_publish_lock", ticket_id=ticket, token=lock["token"]))["released"]
            published = await call(two, "publish_ticket", ticket_id=ticket[:6])
            assert published["status"] == "pr_opened" and published["url"].endswith("/pull/1")
            assert (await call(one, "close_ticket_on_merge", ticket_id=ticket))["merged"] is False
            refused = await fails(one, "clear_integration_branch", ticket_id=ticket)
            assert refused["reason"] == "ticket_open"
            git("push", "--quiet", "origin", f"refs/lanes/heads/{lane}:refs/heads/main", cwd=machine)  # fast-forward
            closed = await call(one, "close_ticket_on_merge", ticket_id=ticket)
            assert closed["merged"] is True and closed["how"] == "ancestry"
            assert (await call(one, "clear_integration_branch", ticket_id=ticket))["deleted"] is True
            released = await call(one, "release_ticket_claims", ticket_id=ticket)
            assert {r["agent"] for r in released["released"]} == {"coder-1", "coder-2", "coder-3"}
            assert (await call(one, "process_merge_queue"))["integrated"] == []
            return await call(one, "publisher_status")

    status = anyio.run(scenario)
    assert status["counts"]["merged"] == 1 and status["counts"]["ready"] == 0


def test_releasing_a_publish_lock_with_another_token_changes_nothing(api):
    ticket = api.ticket_open("ship it", actor="pub-1")["ticket"]
    lock = api.acquire_publish_lock(ticket, "pub-1")
    before = api.ledger_log(limit=1)[0]["commit"]
    with pytest.raises(Conflict) as refused:
        api.release_publish_lock(ticket, "0" * 16, "pub-2")
    assert refused.value.code == "publish_locked" and refused.value.details["holder"] == "pub-1"
    assert api.ledger_log(limit=1)[0]["commit"] == before  # no op written for a release that did nothing
    assert api.release_publish_lock(ticket, lock["token"], "pub-1")["released"] is True
    after = api.ledger_log(limit=1)[0]["commit"]
    assert api.release_publish_lock(ticket, lock["token"], "pub-1") == {"ticket": ticket, "released": False}
    assert api.ledger_log(limit=1)[0]["commit"] == after  # nor for one with no lock left to release


def test_a_held_publish_lock_says_until_when_as_a_time_a_person_reads(api):
    """The second publisher's one-line error named the lock's end as raw epoch seconds ("held until
    1796164746"); it now says the UTC time, while `details["until"]` keeps the number for programs."""
    ticket = api.ticket_open("ship it", actor="pub-1")["ticket"]
    lock = api.acquire_publish_lock(ticket, "pub-1", ttl=120)
    with pytest.raises(Conflict) as refused:
        api.acquire_publish_lock(ticket, "pub-2")
    until = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(lock["until"]))
    assert refused.value.code == "publish_locked" and refused.value.details["until"] == lock["until"]
    assert f"lock held until {until}," in str(refused.value), str(refused.value)


def test_publish_takes_a_full_branch_ref_and_a_new_base_on_a_re_publish(tmp_path, repo):
    """`--branch refs/heads/feature/login` pushed a branch literally named `refs/heads/feature/login`
    (refs/heads/refs/heads/… on the forge, and that name in the PR command), and a re-publish with another
    `--base` said "already at" and kept the old base. The first is the branch feature/login; the second
    records the new base. (No `[publish] pr_command` here: the branch is published with no pull request.)"""
    from integration_helpers import claimed_task, work

    forge = tmp_path / "forge.git"
    git("init", "-q", "--bare", str(forge), cwd=tmp_path)
    git("remote", "add", "origin", str(forge), cwd=repo)
    git("push", "-q", "origin", "main", "main:release", cwd=repo)
    api = Lanes(repo)
    ticket = api.ticket_open("Login")["ticket"]
    task, ws = claimed_task(api, "coder-1", "one", "Login", ticket)
    work(api, "coder-1", ws, {"login.py": "login\n"})
    api.task_done(task, "coder-1")

    first = run_cli("publish", ticket[:6], "--branch", "refs/heads/feature/login", "--json", cwd=repo)
    assert first.code == 0, first.err
    assert (first.json["branch"], first.json["status"]) == ("feature/login", "branch_published")
    assert git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=forge).split() == \
        ["refs/heads/feature/login", "refs/heads/main", "refs/heads/release"]
    again = run_cli("publish", ticket[:6], "--base", "release", "--json", cwd=repo)
    assert again.code == 0, again.err
    assert (again.json["status"], again.json["base"], again.json["pushed"]) == ("branch_published", "release", False)
    assert api.publish_status()["published"][0]["publication"]["base"] == "release"
    assert run_cli("publish", ticket[:6], "--json", cwd=repo).json["status"] == "unchanged"
    tag = run_cli("publish", ticket[:6], "--branch", "refs/tags/v1", cwd=repo)
    assert tag.code == 1 and "refs/tags/v1" in tag.err and "Traceback" not in tag.err


def test_publishing_under_another_branch_opens_a_new_pull_request(tmp_path, project):
    """The refusal of a branch someone pushed to says to publish under another branch (`--branch NAME`); doing
    so ran the update command (here none), posted pr_updated and recorded the first branch's pull request as
    the new branch's. A pull request belongs to its branch: another branch (or remote) opens one of its own."""
    api, machine, spool, server, url = project
    ticket, _ = integrated_ticket(api)
    first = run_cli("publish", ticket[:6], "--json", cwd=machine)
    assert first.code == 0 and first.json["url"] == "https://forge.example/acme/project/pull/1", first.err
    again = run_cli("publish", ticket[:6], "--branch", "review/login", "--json", cwd=machine)
    assert again.code == 0, again.err
    assert (again.json["status"], again.json["branch"]) == ("pr_opened", "review/login")
    assert again.json["url"] == "https://forge.example/acme/project/pull/2"
    calls = [json.loads(line) for line in (spool / "calls.jsonl").read_text().splitlines()]
    assert calls == [[f"lanes/ticket/{ticket[:8]}", "main"], ["review/login", "main"]]
    opened = [p for p in api.board_read(None, limit=100)["posts"] if p["kind"] == "pr_opened"]
    assert [p["text"].rsplit(" ", 1)[-1] for p in opened] == [first.json["url"], again.json["url"]]
    publication = api.publish_status()["published"][0]["publication"]
    assert (publication["branch"], publication["url"]) == ("review/login", again.json["url"])


def test_publishing_into_a_base_the_remote_lacks_is_refused_before_anything_moves(tmp_path, project):
    """`--base relase` (a typo) pushed the branch, ran the PR command and published the ticket; `publish
    sync` then found no base to compare with and called the ticket "not merged yet" for good."""
    api, machine, spool, server, url = project
    ticket, _ = integrated_ticket(api)
    before = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=server.path("project"))
    result = run_cli("publish", ticket[:6], "--base", "relase", cwd=machine)
    assert result.code == 1, result.err
    assert result.err.startswith("git-lanes: error: origin has no branch 'relase' for the pull request to merge into")
    assert "Traceback" not in result.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)", cwd=server.path("project")) == before
    assert not (spool / "calls.jsonl").exists()
    assert api.ticket_show(ticket)["status"] != "published"


def test_the_way_on_from_a_branch_someone_pushed_to_brings_their_commits_in_and_publishes(tmp_path, project):
    """The refusal said "bring their commits into the integration lane" without saying how: their commits
    were fetched, but only to a ref it did not name. Its hint now gives the commands; run as given, they
    bring the reviewer's commit into the lane and the next publish fast-forwards the branch."""
    import re

    api, machine, spool, server, url = project
    ticket, lane = integrated_ticket(api)
    assert api.publish(ticket)["status"] == "pr_opened"
    branch = f"lanes/ticket/{ticket[:8]}"
    reviewer = reviewer_with(tmp_path, url, branch)
    git("checkout", "--quiet", "-b", "review", "FETCH_HEAD", cwd=reviewer)
    (reviewer / "review.txt").write_text("a reviewer's fix\n")
    git("add", "review.txt", cwd=reviewer)
    git("commit", "--quiet", "-m", "reviewer's fix", cwd=reviewer)
    git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=reviewer)
    theirs = git("rev-parse", "HEAD", cwd=reviewer).strip()

    refused = run_cli("publish", ticket[:6], "--json", cwd=machine)
    assert refused.code == 3 and refused.json["error"] == "publish_rejected", refused.err
    steps = re.findall(r"`(git lanes [^`]+)`", refused.json["hint"])
    assert len(steps) == 3, refused.json["hint"]
    for command in steps:
        step = run_cli(*command.split()[2:], cwd=machine)
        assert step.code == 0, (command, step.err)
    again = run_cli("publish", ticket[:6], "--json", cwd=machine)
    assert again.code == 0 and again.json["pushed"] is True, again.err
    head = git("rev-parse", f"refs/heads/{branch}", cwd=server.path("project")).strip()
    assert git("merge-base", "--is-ancestor", theirs, head, cwd=server.path("project"), check=False) == ""
    assert git("show", f"{head}:review.txt", cwd=server.path("project")) == "a reviewer's fix\n"


def test_a_publisher_killed_after_its_pull_request_opened_does_not_open_a_second(project):
    """SIGKILL after the PR command opened the pull request, before the ledger recorded it: every rerun ran
    the command again, and a real forge refuses a second pull request for one branch for good. The rerun
    now refuses (exit 3) saying a pull request may be open, `--pr URL` records the one the forge has, and
    `--pr new` (here through the MCP face) runs the command again."""
    import anyio
    from mcp_helpers import call, fails, mcp_session

    api, machine, spool, server, url = project
    ticket, _ = integrated_ticket(api)
    branch = f"lanes/ticket/{ticket[:8]}"
    (spool / "kill-publisher").write_text("")
    doomed = publisher(machine, ticket[:6])
    out, err = doomed.communicate(timeout=120)
    assert doomed.returncode == -signal.SIGKILL, (out, err)  # killed by its own PR command, after it ran
    (spool / "kill-publisher").unlink()

    def calls() -> list:
        return [json.loads(line) for line in (spool / "calls.jsonl").read_text().splitlines()]

    assert calls() == [[branch, "main"]] and api.ticket_show(ticket)["status"] == "ready"
    status = run_cli("publish", "status", "--json", cwd=machine)
    assert status.json["ready"][0]["intent"]["branch"] == branch, status.out
    assert f"PR command of Test for {branch} not recorded" in run_cli("publish", "status", cwd=machine).out
    again = run_cli("publish", ticket[:6], "--json", cwd=machine)
    assert again.code == 3 and again.json["error"] == "publish_interrupted", again.err
    assert f"git lanes publish {ticket[:8]} --pr URL" in again.json["hint"] and "Traceback" not in again.err
    assert calls() == [[branch, "main"]]  # no second pull request
    bad = run_cli("publish", ticket[:6], "--pr", "pull 1", cwd=machine)
    assert bad.code == 1 and len(bad.err.strip().splitlines()) <= 2 and "Traceback" not in bad.err, bad.err

    recorded = run_cli("publish", ticket[:6], "--pr", "https://forge.example/acme/project/pull/1", "--json",
                       cwd=machine)
    assert recorded.code == 0, recorded.err
    assert (recorded.json["status"], recorded.json["url"]) == ("pr_opened", "https://forge.example/acme/project/pull/1")
    assert calls() == [[branch, "main"]]
    assert run_cli("publish", ticket[:6], "--json", cwd=machine).json["status"] == "unchanged"

    # once more, killed again on a new branch; a person finds no pull request there: `new` runs it again
    (spool / "kill-publisher").write_text("")
    doomed = subprocess.Popen([sys.executable, "-m", "git_lanes", "publish", ticket[:6], "--branch", "review/x"],
                              cwd=machine, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    doomed.communicate(timeout=120)
    assert doomed.returncode == -signal.SIGKILL
    (spool / "kill-publisher").unlink()

    async def scenario():
        async with mcp_session(machine, "--agent", "pub-1", "--toolsets", "publisher") as face:
            refused = await fails(face, "publish_ticket", ticket_id=ticket[:6], branch="review/x")
            assert refused["code"] == "conflict" and refused["reason"] == "publish_interrupted"
            return await call(face, "publish_ticket", ticket_id=ticket[:6], branch="review/x", pr="new")

    published = anyio.run(scenario)
    assert (published["status"], published["url"]) == ("pr_opened", "https://forge.example/acme/project/pull/3")
    assert calls() == [[branch, "main"], ["review/x", "main"], ["review/x", "main"]]
    assert api.publish_status()["published"][0]["publication"]["url"] == published["url"]


def second_machine(tmp_path, project):
    """The project's ticket, integrated and synced, and a second clone of the remote that has synced it:
    (api, machine, spool, ticket, the other clone's path, its Lanes)."""
    api, machine, spool, server, url = project
    ticket, _ = integrated_ticket(api)
    api.sync()
    other = clone(tmp_path, url, "machine-b")
    theirs = Lanes.open_for_sync(other)[0]
    theirs.sync()
    return api, machine, spool, ticket, other, theirs


def test_two_machines_publishing_one_ticket_open_one_pull_request(tmp_path, project):
    """Two clones syncing through one remote each took the ticket's publish lock in their own ledger and
    each ran the PR command: two pull requests for one branch (a real forge refuses the second for good).
    The remote's ledger now decides, as it does for task claims: the second machine, publishing while the
    first runs its command, exits 3 naming it and runs nothing; once the first is done, it joins the pull
    request the first opened."""
    api, machine, spool, ticket, other, theirs = second_machine(tmp_path, project)
    assert theirs.ticket_show(ticket)["status"] == "ready"

    (spool / "block").write_text("")
    first = publisher(machine, ticket[:6])
    wait_for(spool / "waiting-1", first)
    second = run_cli("publish", ticket[:6], "--json", "--agent", "publisher-b", cwd=other)
    assert second.code == 3 and second.json["error"] == "publish_locked", second.err
    assert second.json["holder"] == "Test" and "being published by Test" in second.err
    (spool / "release").write_text("")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    opened = json.loads(out)["url"]
    assert opened == "https://forge.example/acme/project/pull/1"

    joined = run_cli("publish", ticket[:6], "--json", "--agent", "publisher-b", cwd=other)
    assert joined.code == 0, joined.err
    assert (joined.json["status"], joined.json["url"]) == ("unchanged", opened)
    calls = [json.loads(line) for line in (spool / "calls.jsonl").read_text().splitlines()]
    assert calls == [[f"lanes/ticket/{ticket[:8]}", "main"]]  # one pull request, from the first machine


def test_intents_of_two_machines_for_one_ticket_meet_on_the_remote_and_the_later_is_refused(tmp_path, project):
    """The rule that settles two publishes that each checked before either claimed: the intent that reaches
    the remote's ledger second is refused when its sync replays it, so its publisher never runs the command."""
    api, machine, spool, ticket, other, theirs = second_machine(tmp_path, project)
    branch = f"lanes/ticket/{ticket[:8]}"
    for side, token in ((api, "a" * 16), (theirs, "b" * 16)):
        side._append("publish.intent", side._actor("pub"), {"ticket": ticket, "token": token, "remote": "origin",
                                                             "branch": branch, "base": "main", "head": "0" * 40,
                                                             "update": False})
    api.sync()
    report = theirs.sync().to_dict()
    assert [op["type"] for ops in report["refused"].values() for op in ops] == ["publish.intent"]
    assert theirs._state().get(f"publish/intents/{ticket}.json")["token"] == "a" * 16


def test_a_mistyped_ticket_is_refused_before_publish_reaches_the_shared_ledger(project):
    """With a ledger shared through the remote, publish synced that ledger before it looked the ticket up:
    a typo waited on the network and, with the remote out of reach, failed as an unreachable remote (exit 5)
    instead of naming the ticket. The id is checked in the local ledger first, without the network."""
    api, machine, spool, server, url = project
    ticket = api.ticket_open("Login flow")["ticket"]
    api.sync()
    git("remote", "set-url", "origin", "git://127.0.0.1:1/nowhere", cwd=machine)  # any network use fails
    typo = run_cli("publish", "fedcba98", "--json", cwd=machine)
    assert typo.code == 1 and typo.json["error"] == "unknown_ticket", typo.out + typo.err
    not_ready = run_cli("publish", ticket[:6], "--json", cwd=machine)  # a real one still asks the remote first
    assert not_ready.code == 5, not_ready.out + not_ready.err


def test_a_ticket_published_again_after_its_pull_request_merged_opens_a_new_one(tmp_path, project):
    """A task joined a published ticket (reopening it) and the pull request was merged meanwhile: `publish
    sync` passes over an open ticket, and the next publish pushed the follow-up work to the merged branch,
    ran the update command and posted pr_updated with the merged pull request's address, so no reviewer
    ever saw it. A merged pull request is not updated: the follow-up opens one of its own."""
    api, machine, spool, server, url = project
    ticket, _ = integrated_ticket(api)
    first = api.publish(ticket)
    assert first["status"] == "pr_opened"
    follow_up, ws = claimed_task(api, "coder-4", "four", "Follow-up", ticket)
    reviewer = reviewer_with(tmp_path, url, first["branch"])
    git("merge", "--quiet", "--no-edit", "FETCH_HEAD", cwd=reviewer)
    git("push", "--quiet", "origin", "main", cwd=reviewer)
    assert api.publish_sync()["merged"] == []  # open again: nothing to close yet
    work(api, "coder-4", ws, {"four.txt": "four\n"})
    assert api.task_done(follow_up, "coder-4")["ticket_ready"] == ticket
    again = run_cli("publish", ticket[:6], "--json", cwd=machine)
    assert again.code == 0, again.err
    assert again.json["status"] == "pr_opened" and again.json["pushed"] is True
    assert again.json["url"] == "https://forge.example/acme/project/pull/2"
    calls = [json.loads(line) for line in (spool / "calls.jsonl").read_text().splitlines()]
    assert calls == [[first["branch"], "main"]] * 2  # the PR command both times, never an update
    assert [p["kind"] for p in api.board_read(None, limit=100)["posts"] if p["kind"].startswith("pr_")] == \
        ["pr_opened", "pr_opened"]
