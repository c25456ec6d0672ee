"""The ledger under real concurrent processes: one winner per claimed task in every trial, every post
present once in one total order, and SIGKILL at any instant of an append losing nothing acknowledged."""

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
from ledger_helpers import fsck_clean, ledger_head

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain import board

pytestmark = pytest.mark.slow

WORKER = str(Path(__file__).with_name("ledger_worker.py"))
CLAIMERS = 16
CLAIM_TRIALS = 25
POSTERS = 8
POSTS_EACH = 100
KILL_ROUNDS = 12


def start(repo: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    proc = subprocess.Popen([sys.executable, WORKER, str(repo), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert json.loads(proc.stdout.readline()) == {"ready": True}, proc.stderr.read()
    return proc


def rest_of(worker: subprocess.Popen) -> str:
    """What a worker printed after the lines already read from it. Through the same file object: its
    `readline` may have buffered more, which `communicate` (reading the pipe itself) would skip, leaving a
    line cut at its start."""
    out = worker.stdout.read()
    worker.wait()
    worker.stdin.close()
    worker.stderr.close()
    return out


def test_sixteen_processes_race_for_each_task_and_exactly_one_wins(repo):
    api = Lanes(repo)
    workers = [start(repo, "claim", f"agent-{i}") for i in range(CLAIMERS)]
    try:
        for trial in range(CLAIM_TRIALS):
            task = api.task_create(f"task {trial}", actor="lead")["task"]
            for worker in workers:
                worker.stdin.write(f"{task} 1\n")
            for worker in workers:
                worker.stdin.flush()
            results = [json.loads(worker.stdout.readline()) for worker in workers]
            winners = [r for r in results if r["won"]]
            assert len(winners) == 1, results
            assert winners[0]["version"] == 2
            losers = [r for r in results if not r["won"]]
            assert {(r["exit"], r["code"]) for r in losers} <= {(3, "task_claimed"), (3, "version_conflict")}
            owner = api.task_show(task)["owner"]
            assert owner is not None and api.task_show(task)["version"] == 2
    finally:
        for worker in workers:
            worker.stdin.close()
            worker.wait(timeout=60)
    claims = [op for op in ledger.ops_between(api.ctx.store, None, ledger_head(repo)) if op.type == "task.claim"]
    assert len(claims) == CLAIM_TRIALS  # refused claims left no trace
    fsck_clean(repo)


def test_eight_processes_post_a_hundred_each_all_present_once_in_one_order(repo):
    workers = [start(repo, "post", f"poster-{i}", str(POSTS_EACH)) for i in range(POSTERS)]
    acknowledged = {}
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        for line in out.splitlines():
            record = json.loads(line)
            acknowledged[record["op"]] = record["post"]
    api = Lanes(repo)
    state = ledger.state_at(api.ctx.store, ledger_head(repo))
    total = POSTERS * POSTS_EACH
    assert board.current_seq(state) == total and len(acknowledged) == total
    posts = [board.get_post(state, seq) for seq in range(1, total + 1)]
    assert sorted(p["text"] for p in posts) == sorted(f"poster-{i} {n}" for i in range(POSTERS)
                                                       for n in range(POSTS_EACH))
    assert {p["id"]: p["seq"] for p in posts} == acknowledged
    # the ledger's commit order is the board's order, and each poster's posts keep their own order
    ops = [op for op in ledger.ops_between(api.ctx.store, None, ledger_head(repo)) if op.type == "board.post"]
    assert [op.id for op in ops] == [p["id"] for p in posts]
    for i in range(POSTERS):
        mine = [int(p["text"].split()[1]) for p in posts if p["from"] == f"poster-{i}"]
        assert mine == list(range(POSTS_EACH))
    # the reflog holds each move once, in the order made: an unbroken chain ending at the head
    moves = [line.split("\t")[0].split()[:2] for line in (repo / ".git/logs/refs/lanes/ledger").read_text()
             .splitlines()][-total:]
    assert all(before[1] == after[0] for before, after in zip(moves, moves[1:])) and moves[-1][1] == ledger_head(repo)
    fsck_clean(repo)


def test_a_process_killed_at_any_instant_of_an_append_loses_nothing_acknowledged(repo):
    rng = random.Random(4)
    acknowledged: list[str] = []
    for round_ in range(KILL_ROUNDS):
        worker = start(repo, "post", f"victim-{round_}", "100000")
        # The first acknowledgement proves the worker is appending (however slow the machine), then a few
        # appends' worth of time, so the kill lands anywhere in one: fold, object writes, ref update.
        first = worker.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.05))
        worker.send_signal(signal.SIGKILL)
        out = rest_of(worker)
        assert worker.returncode == -signal.SIGKILL, "the kill interrupted the worker mid-run"
        acknowledged += [json.loads(line)["op"] for line in (first + out).splitlines() if line.strip()]
        api = Lanes(repo)
        head = ledger_head(repo)
        present = {op.id for op in ledger.ops_between(api.ctx.store, None, head)} if head else set()
        missing = [op for op in acknowledged if op not in present]
        assert not missing, f"round {round_}: acknowledged ops lost: {missing[:3]}"
        fsck_clean(repo)
        # the next writer is not blocked by anything the dead one left
        api.board_post(f"after kill {round_}", "survivor")
    assert len(acknowledged) >= KILL_ROUNDS


def test_writers_killed_at_any_instant_while_others_wait_apply_each_op_at_most_once(repo):
    """Four posters at once, so most appends are queued and applied by whichever holds the lock; one is
    killed at a random instant each round (as a holder, in a round, or as a waiter): every acknowledged op
    is in the ledger, and no op is in it twice."""
    rng = random.Random(7)
    acknowledged: list[str] = []
    for round_ in range(6):
        workers = [start(repo, "post", f"r{round_}-w{i}", "100000") for i in range(4)]
        firsts = [worker.stdout.readline() for worker in workers]
        time.sleep(rng.uniform(0.0, 0.05))
        victim = rng.randrange(4)
        workers[victim].send_signal(signal.SIGKILL)
        time.sleep(rng.uniform(0.0, 0.02))
        for worker in workers:
            worker.send_signal(signal.SIGKILL)
        for first, worker in zip(firsts, workers):
            out = rest_of(worker)
            lines = (first + out).split("\n")
            # The kill may cut the last acknowledgement mid-line: a line not ended was not acknowledged.
            acknowledged += [json.loads(line)["op"] for line in lines[:-1] if line.strip()]
        api = Lanes(repo)
        api.board_post(f"after round {round_}", "survivor")  # settles what a killed holder left
        ids = [op.id for op in ledger.ops_between(api.ctx.store, None, ledger_head(repo))]
        assert len(ids) == len(set(ids)), f"round {round_}: an op applied twice"
        assert not set(acknowledged) - set(ids), f"round {round_}: acknowledged ops lost"
        fsck_clean(repo)
