"""The ledger across machines, through a git daemon on loopback: concurrent claims of one task converge on
one owner and the loser is told; board posts from three machines arrive once each, in one order everywhere;
a sync killed at any instant leaves both sides consistent and the next sync completes it."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, rolled_up, run_cli
from gitserver import clone, make_origin, server  # noqa: F401  (server is a fixture)
from test_sync import synced_refs

from git_lanes.api import Lanes

WORKER = str(Path(__file__).with_name("sync_worker.py"))
CONVERGE_ROUNDS = 4


def start_machines(tmp_path: Path, server, count: int) -> list[Path]:  # noqa: F811
    url = server.bare("project")
    origin = make_origin(tmp_path, url)
    Lanes(origin).sync()
    machines = [origin]
    for index in range(1, count):
        machine = clone(tmp_path, url, f"machine-{index}")
        Lanes.open_for_sync(machine)[0].pull()
        machines.append(machine)
    return machines


def workers(jobs: list[tuple[Path, list[str]]]) -> list[list[dict]]:
    """Run each machine's actions in its own process, all at once; one JSON record per action."""
    here = Path(__file__).resolve()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parent), str(here.parents[1])])}
    procs = [subprocess.Popen([sys.executable, WORKER, str(repo), *actions], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for repo, actions in jobs]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append([json.loads(line) for line in out.splitlines()])
    return results


def converge(machines: list[Path], server_repo: Path) -> list[dict]:
    """Sync every machine in turn until all of them and the server hold the same lane state; the reports."""
    reports = []
    for _ in range(CONVERGE_ROUNDS):
        for machine in machines:
            reports.append(Lanes(machine).sync())
        states = [synced_refs(m) for m in machines]
        if all(s == states[0] for s in states) and states[0] == synced_refs(server_repo):
            return reports
    pytest.fail("machines did not converge")


@pytest.mark.parametrize("trial", range(5))
def test_two_machines_claim_one_task_one_owner_and_the_loser_is_told(tmp_path, server, trial):  # noqa: F811
    origin, first, second = start_machines(tmp_path, server, 3)
    task = Lanes(origin).task_create("the one task", actor="lead")["task"]
    Lanes(origin).sync()
    for machine in (first, second):
        Lanes(machine).sync()
    rng = random.Random(trial)
    jobs = []
    for machine, agent in ((first, "agent-a"), (second, "agent-b")):
        actions = [f"claim:{task}:{agent}", "sync"]
        if rng.random() < 0.5:
            actions.insert(0, "sync")
        jobs.append((machine, actions))
    results = workers(jobs)
    syncs = [r for rs in results for r in rs if r["action"] == "sync"]
    assert all(r["ok"] for r in syncs), syncs
    claims = {r["action"].rsplit(":", 1)[1]: r for rs in results for r in rs if r["action"].startswith("claim")}
    reports = [r["result"] for r in syncs] + converge([origin, first, second], server.path("project"))

    owners = {Lanes(m).task_show(task)["owner"] for m in (origin, first, second)}
    assert len(owners) == 1
    winner = owners.pop()
    loser, loser_machine = ("agent-b", second) if winner == "agent-a" else ("agent-a", first)
    winner_machine = first if winner == "agent-a" else second
    assert claims[winner]["ok"]
    assert Lanes(winner_machine).agent_heartbeat(winner)["refused"] == []
    refused = [(actor, op["id"]) for report in reports for actor, ops in report["refused"].items() for op in ops]
    told = Lanes(loser_machine).agent_heartbeat(loser)["refused"]
    if not claims[loser]["ok"]:
        # the winner's claim had already arrived by sync: the loser was refused at once, exit 3
        assert claims[loser]["error"]["error"] == "task_claimed"
        assert refused == [] and told == []
        return
    # both claims held locally: exactly one sync found the loser's no longer held and recorded it for the
    # loser, whose next heartbeat says so
    assert refused == [(loser, claims[loser]["result"]["op"])]
    assert [w["original"]["type"] for w in told] == ["task.claim"]
    assert told[0]["original"]["args"]["task"] == task


def test_claims_made_apart_the_second_sync_refuses_its_claim_and_tells_the_agent(tmp_path, server):  # noqa: F811
    origin, first, second = start_machines(tmp_path, server, 3)
    task = Lanes(origin).task_create("the one task", actor="lead")["task"]
    Lanes(origin).sync()
    Lanes(first).sync()
    Lanes(second).sync()
    Lanes(first).task_claim(task, "agent-a")
    lost = Lanes(second).task_claim(task, "agent-b")
    assert Lanes(first).sync()["refused"] == {}
    report = Lanes(second).sync()
    assert [(op["id"], op["type"]) for op in report["refused"]["agent-b"]] == [(lost["op"], "task.claim")]
    assert report["refused"]["agent-b"][0]["refusal"]["error"] == "task_claimed"
    assert report["ledger"]["refused"] == 1
    from git_lanes.cli.sync import render

    assert f"refused for agent-b: task.claim {lost['op'][:8]}: task {task[:8]} is claimed by agent-a" \
        in render(report)
    assert Lanes(second).task_show(task)["owner"] == "agent-a"
    told = Lanes(second).agent_heartbeat("agent-b")["refused"]
    assert [w["original"]["id"] for w in told] == [lost["op"]]
    assert Lanes(second).agent_heartbeat("agent-b")["refused"] == []  # told once


def board_texts(machine: Path) -> list[str]:
    posts = Lanes(machine).board_read(None, everything=True, limit=10_000)["posts"]
    return [post["text"] for post in posts]


@pytest.mark.parametrize("trial", range(3))
def test_board_posts_from_three_machines_arrive_once_in_one_order(tmp_path, server, trial):  # noqa: F811
    machines = start_machines(tmp_path, server, 3)
    rng = random.Random(100 + trial)
    jobs, expected = [], []
    for index, machine in enumerate(machines):
        actions = []
        for n in range(5):
            text = f"m{index} post {n}"
            expected.append(text)
            actions.append(f"post:{text}:agent-{index}")
            if rng.random() < 0.5:
                actions.append("sync")
        jobs.append((machine, actions))
    workers(jobs)
    converge(machines, server.path("project"))
    orders = [board_texts(m) for m in machines]
    assert sorted(orders[0]) == sorted(expected)  # every post, once
    assert orders[1] == orders[0] and orders[2] == orders[0]
    for index in range(3):  # each machine's own posts keep their order
        mine = [t for t in orders[0] if t.startswith(f"m{index} ")]
        assert mine == [f"m{index} post {n}" for n in range(5)]


def test_a_sync_killed_at_any_instant_leaves_both_sides_consistent(tmp_path, server):  # noqa: F811
    origin, other = start_machines(tmp_path, server, 2)
    remote = server.path("project")
    env = {**os.environ}
    rng = random.Random(7)
    expected: list[str] = []
    duration = None
    for trial in range(12):
        for machine, tag in ((origin, "o"), (other, "x")):
            for n in range(3):
                text = f"{tag}{trial}.{n}"
                Lanes(machine).board_post(text, f"agent-{tag}")
                expected.append(text)
        Lanes(origin).sync()  # the remote is ahead of `other`, and `other` is ahead of it: a real merge
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "git_lanes", "sync", "--json"], cwd=other, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        if duration is None:
            proc.wait(timeout=120)
            duration = time.monotonic() - started
            continue
        time.sleep(rng.uniform(0, duration))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        for repo in (other, remote):
            rolled_up(repo)  # a roll-up the sync started runs in a session of its own: the kill spared it
            fsck = subprocess.run(["git", "fsck", "--no-dangling", "--no-progress"], cwd=repo,
                                  capture_output=True, text=True)
            assert fsck.returncode == 0, fsck.stderr
        # both sides stay readable, and nothing acknowledged on either side is gone
        assert set(board_texts(origin)) <= set(expected)
        local = board_texts(other)
        assert all(t in local for t in expected if t.startswith("x"))
    converge([origin, other], remote)
    assert sorted(board_texts(origin)) == sorted(expected)
    assert board_texts(other) == board_texts(origin)


@pytest.mark.parametrize("trial", range(3))
def test_random_interleavings_of_work_posts_and_syncs_lose_nothing(tmp_path, server, trial):  # noqa: F811
    machines = start_machines(tmp_path, server, 3)
    rng = random.Random(500 + trial)
    jobs, posts, files = [], [], {}
    for index, machine in enumerate(machines):
        actions = []
        for step in range(6):
            roll = rng.random()
            if roll < 0.4:
                text = f"m{index} post {step}"
                posts.append(text)
                actions.append(f"post:{text}:agent-{index}")
            elif roll < 0.75:
                lane = f"m{index}/lane{rng.randrange(2)}"
                files[(lane, f"step{step}.txt")] = f"{index}.{step}\n"
                actions.append(f"lane:{lane}:step{step}.txt:{index}.{step}\n")
            else:
                actions.append("sync")
        jobs.append((machine, actions))
    results = workers(jobs)
    assert all(r["ok"] for rs in results for r in rs), results
    converge(machines, server.path("project"))
    order = board_texts(machines[0])
    assert sorted(order) == sorted(posts)
    for machine in machines:
        assert board_texts(machine) == order
        api = Lanes(machine)
        for (lane, path), text in files.items():
            head = api.lane_show(lane)["head"]
            blob = subprocess.run(["git", "show", f"{head}:{path}"], cwd=machine, capture_output=True, text=True)
            assert blob.stdout == text, (machine, lane, path)


def posts_by_text(machine: Path) -> dict[str, dict]:
    return {p["text"]: p for p in Lanes(machine).board_read(None, everything=True, limit=10_000)["posts"]}


def test_a_read_cursor_replayed_past_remote_posts_never_hides_them(tmp_path, server):  # noqa: F811
    origin, other = start_machines(tmp_path, server, 2)
    Lanes(origin).board_post("common", "agent-o")
    Lanes(origin).sync()
    Lanes(other).sync()
    Lanes(other).board_read("reader")  # an agent already at work, whose cursor is at the merge base
    Lanes(other).sync()
    Lanes(origin).sync()
    Lanes(origin).board_post("to everyone, from origin", "agent-o")
    Lanes(origin).board_post("to the reader, from origin", "agent-o", to="reader")
    Lanes(origin).sync()
    Lanes(other).board_post("from other", "agent-x")
    seen = Lanes(other).board_read("reader", unread_only=True)  # what this machine has, moving its cursor
    assert [p["text"] for p in seen["posts"]] == ["from other"]
    Lanes(other).sync()
    unread = {p["text"] for p in Lanes(other).board_read("reader", unread_only=True)["posts"]}
    assert {"to everyone, from origin", "to the reader, from origin"} <= unread
    assert Lanes(other).board_read("reader", unread_only=True)["posts"] == []  # and now they are read


def test_resolving_a_local_post_resolves_that_post_after_the_replay(tmp_path, server):  # noqa: F811
    origin, other = start_machines(tmp_path, server, 2)
    Lanes(origin).board_post("origin's question", "agent-o", kind="question")
    mine = Lanes(other).board_post("other's question", "agent-x", kind="question")
    Lanes(other).board_resolve(mine["post"], actor="agent-x")
    Lanes(origin).sync()
    Lanes(other).sync()
    Lanes(origin).sync()
    for machine in (origin, other):
        posts = posts_by_text(machine)
        assert posts["other's question"]["resolved"] is not None
        assert posts["origin's question"]["resolved"] is None


def test_answering_a_local_question_answers_that_question_after_the_replay(tmp_path, server):  # noqa: F811
    """The answer named the question by its number before the replay renumbered it, and so answered (and
    took off the unanswered list) whichever post held that number on the remote."""
    origin, other = start_machines(tmp_path, server, 2)
    Lanes(origin).board_post("origin's question", "agent-o", kind="question")
    mine = Lanes(other).board_post("other's question", "agent-x", kind="question")
    Lanes(other).board_answer(mine["post"], "answered here", "agent-y")
    Lanes(origin).sync()
    Lanes(other).sync()
    Lanes(origin).sync()
    for machine in (origin, other):
        posts = posts_by_text(machine)
        assert posts["other's question"]["resolved"]["answer"] == posts["answered here"]["seq"]
        assert posts["answered here"]["reply_to"] == posts["other's question"]["seq"]
        assert posts["origin's question"]["resolved"] is None
        assert [p["text"] for p in Lanes(machine).board_read(unanswered=True)["posts"]] == ["origin's question"]


@pytest.mark.parametrize("undone", ["post", "resolve"])
def test_an_undo_of_a_local_post_still_holds_after_the_replay_renumbers_the_post(tmp_path, server, undone):  # noqa: F811
    """The undo's inverse op names the post by its number, which the replay after a peer's post changes: it
    must follow the post there, not be refused as if someone had changed it (the undone post came back)."""
    origin, other = start_machines(tmp_path, server, 2)
    agent = {"GIT_LANES_AGENT": "agent-x"}
    assert run_cli("board", "post", "wrong channel", "--kind", "question", cwd=other, env=agent).code == 0
    if undone == "resolve":
        assert run_cli("board", "resolve", "1", cwd=other, env=agent).code == 0
    undo = run_cli("undo", "--json", cwd=other)
    assert undo.code == 0, undo.err
    Lanes(origin).board_post("from origin", "agent-o")  # takes #1 on the remote: the local post becomes #2
    Lanes(origin).sync()
    synced = run_cli("sync", "--json", cwd=other)
    assert synced.code == 0, synced.err
    assert synced.json["ledger"]["refused"] == 0 and synced.json["refused"] == {}, synced.json["refused"]
    converge([origin, other], server.path("project"))
    for machine in (origin, other):
        posts = posts_by_text(machine)
        if undone == "post":
            assert "wrong channel" not in posts  # retracted: listed nowhere
        else:
            assert posts["wrong channel"]["seq"] == 2 and posts["wrong channel"]["resolved"] is None
        assert posts["from origin"]["seq"] == 1


def test_concurrent_syncs_from_one_machine_all_succeed_and_lose_nothing(tmp_path, server):  # noqa: F811
    origin, other = start_machines(tmp_path, server, 2)
    for n in range(3):
        Lanes(origin).board_post(f"origin {n}", "agent-o")
    Lanes(origin).sync()
    jobs = [(other, [f"post:other {n}:agent-{n}", "sync", "sync"]) for n in range(3)]
    results = workers(jobs)
    assert all(r["ok"] for rs in results for r in rs), results
    converge([origin, other], server.path("project"))
    assert sorted(board_texts(other)) == sorted([f"origin {n}" for n in range(3)] + [f"other {n}" for n in range(3)])


@pytest.mark.parametrize("posts, cut", [(3, 2), (20, 18)])  # 18: more ids than are looked for one by one
def test_ops_a_force_push_cut_from_the_remote_come_back_once_not_once_per_machine(tmp_path, server,  # noqa: F811
                                                                                    posts, cut):
    machines = start_machines(tmp_path, server, 3)
    remote = server.path("project")
    for n in range(posts):
        Lanes(machines[1]).board_post(f"post {n}", "agent-b")
    Lanes(machines[1]).sync()
    for machine in machines:
        Lanes(machine).sync()
    # someone with plain git rewrites the remote's ledger: its last ops give way to one commit of their own,
    # with the state as it stood where they cut
    head = git("rev-parse", "refs/lanes/ledger", cwd=remote).strip()
    rogue = git("commit-tree", f"{head}~{cut}^{{tree}}", "-p", f"{head}~{cut}", "-m", "rewritten by hand",
                cwd=remote).strip()
    git("update-ref", "refs/lanes/ledger", rogue, head, cwd=remote)

    converge(machines, remote)
    # every machine held the cut ops; whichever syncs first brings them back, the others find them there
    texts = board_texts(machines[0])
    assert len(texts) == len(set(texts)) and {f"post {n}" for n in range(posts - cut, posts)} <= set(texts)
    assert all(board_texts(machine) == board_texts(machines[0]) for machine in machines)


def test_a_machine_whose_cut_ops_another_brought_back_reports_nothing_going_out(tmp_path, server):  # noqa: F811
    machines = start_machines(tmp_path, server, 3)
    remote = server.path("project")
    for n in range(3):
        Lanes(machines[1]).board_post(f"post {n}", "agent-b")
    for machine in (machines[1], machines[0], machines[2]):
        Lanes(machine).sync()
    head = git("rev-parse", "refs/lanes/ledger", cwd=remote).strip()
    rogue = git("commit-tree", f"{head}~2^{{tree}}", "-p", f"{head}~2", "-m", "rewritten by hand", cwd=remote).strip()
    git("update-ref", "refs/lanes/ledger", rogue, head, cwd=remote)
    Lanes(machines[0]).sync()  # brings the cut ops back
    brought_back = git("rev-parse", "refs/lanes/ledger", cwd=remote).strip()

    result = run_cli("sync", "--json", cwd=machines[2])
    assert result.code == 0, result.err
    report = result.json
    assert report["went_out"] == [] and report["ledger"]["went_out"] == 0, report
    assert [m["ref"] for m in report["came_in"]] == ["refs/lanes/ledger"]
    assert git("rev-parse", "refs/lanes/ledger", cwd=machines[2]).strip() == brought_back
    assert git("rev-parse", "refs/lanes/ledger", cwd=remote).strip() == brought_back


def test_a_remote_ledger_holding_a_newer_format_is_not_replayed_onto(tmp_path, server):  # noqa: F811
    # A peer on a newer git-lanes appended an op of format 2. This machine replayed its own ops on top of a
    # state it cannot read, with no word: they could be refused for what a newer record holds, for good.
    origin, machine = start_machines(tmp_path, server, 2)
    Lanes(origin).board_post("before", "agent-a")
    Lanes(origin).sync()
    Lanes(machine).sync()
    remote = server.path("project")
    head = git("rev-parse", "refs/lanes/ledger", cwd=remote).strip()
    newer = json.dumps({"format": 2, "id": "f" * 16, "type": "board.post", "actor": "agent-n", "time": 1.0,
                        "args": {"text": "from the future"}, "result": {}}, sort_keys=True)
    future = git("commit-tree", f"{head}^{{tree}}", "-p", head, "-m", f"agent-n: post\n\n{newer}", cwd=remote).strip()
    git("update-ref", "refs/lanes/ledger", future, head, cwd=remote)
    Lanes(machine).board_post("local", "agent-b")
    local = git("rev-parse", "refs/lanes/ledger", cwd=machine).strip()

    result = run_cli("sync", "--json", cwd=machine)
    assert result.code != 0 and result.json["error"] == "unsupported_format", result.out + result.err
    assert "format 2" in result.json["message"] and "upgrade git-lanes" in result.json["hint"]
    assert git("rev-parse", "refs/lanes/ledger", cwd=machine).strip() == local  # nothing replayed
    assert git("rev-parse", "refs/lanes/ledger", cwd=remote).strip() == future
