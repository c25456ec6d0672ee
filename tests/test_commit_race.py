"""Many `commit --auto-accept` processes in one workspace at once (Flanes' stress scenario): each either
lands the work, finds nothing left to snapshot, or, having lost a race, exits 3 — never 1, which means bad
input. When the same content landed through another process, the loser answers 0 and names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import git, run_cli, workspace
from test_gates import declare, gate

from git_lanes.domain import gates, transitions
from git_lanes.model.records import Cost, Intent

ROUNDS = 10
WRITERS = 5


def start_commits(cwd, n: int) -> list[subprocess.Popen]:
    env = {**os.environ, "GIT_LANES_AGENT": "stress"}
    return [subprocess.Popen([sys.executable, "-m", "git_lanes", "commit", "-m", f"writer {i}", "--auto-accept",
                              "--json"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for i in range(n)]


def race_rounds(repo, lane: str) -> list[tuple[int, dict]]:
    path = workspace(repo, lane)
    outcomes = []
    for round_number in range(ROUNDS):
        (path / "stress.txt").write_text(f"round {round_number}\n")
        for proc in start_commits(path, WRITERS):
            out, err = proc.communicate(timeout=120)
            outcomes.append((proc.returncode, json.loads(out) if out.strip() else {"stderr": err}))
        # Whatever the interleaving, the round's content is on the lane once it is over.
        assert git("show", f"refs/lanes/heads/{lane}:stress.txt", cwd=repo) == f"round {round_number}\n"
    return outcomes


@pytest.mark.slow
def test_without_gates_every_writer_exits_0_landing_or_finding_nothing_new(api, repo):
    api.lane_create("s")
    outcomes = race_rounds(repo, "s")
    assert {code for code, _ in outcomes} == {0}, [o for o in outcomes if o[0]]
    landed = [o for _, o in outcomes if o.get("status") == "accepted"]
    assert len(landed) == ROUNDS  # one state per round: proposing and deciding is one critical section
    assert all(o.get("status") in ("accepted", "unchanged") for _, o in outcomes)
    assert git("fsck", "--no-progress", cwd=repo) == ""


@pytest.mark.slow
def test_with_a_gate_a_lost_race_is_0_naming_what_landed_or_3_never_1(api, repo):
    declare(api, repo, gate("ok", "pass"))
    api.lane_create("s")
    outcomes = race_rounds(repo, "s")
    assert {code for code, _ in outcomes} <= {0, 3}, [o for o in outcomes if o[0] not in (0, 3)]
    for code, record in outcomes:
        if code == 3:
            assert record["error"] == "decided_meanwhile"
        elif "superseded" in record:
            assert record["status"] == "accepted" and record["id"] != record["superseded"]


def test_a_proposal_superseded_while_its_gates_ran_answers_with_the_transition_that_landed(api, repo):
    api.lane_create("s")
    (workspace(repo, "s") / "f.txt").write_text("same\n")
    first = api.commit("first", "a", lane="s")
    second = api.commit("second", "b", lane="s")  # the same content on the same head: a retried propose
    api.accept(first["id"])
    assert transitions.load(api.ctx, second["to"]).status == "rejected"  # superseded, as the race leaves it
    with api._writing() as ctx:
        answer = gates.decide_raced(ctx, transitions.find(ctx, second["id"]), ())
    assert answer["id"] == first["id"] and answer["status"] == "accepted" and answer["superseded"] == second["id"]


def test_a_proposal_rejected_by_another_writer_while_its_gates_ran_is_a_conflict(api, repo):
    api.lane_create("s")
    (workspace(repo, "s") / "f.txt").write_text("mine\n")
    mine = api.commit("mine", "a", lane="s")
    api.reject(mine["id"], "a person said no")
    with api._writing() as ctx, pytest.raises(Exception) as info:
        gates.decide_raced(ctx, transitions.find(ctx, mine["id"]), ())
    assert info.value.code == "decided_meanwhile" and info.value.exit_code == 3
    assert "a person said no" in info.value.message


def test_deciding_an_already_decided_transition_by_hand_is_refused_as_stale(api, repo, cli):
    api.lane_create("s")
    (workspace(repo, "s") / "f.txt").write_text("x\n")
    record = api.commit("x", "a", lane="s", auto_accept=True)
    again = cli("accept", record["id"][:8], "--json", cwd=repo)
    assert again.code == 3 and again.json["error"] == "already_decided"  # stale state, as a lost race


def test_intent_and_cost_are_kept_by_the_single_critical_section(api, repo):
    api.lane_create("s")
    (workspace(repo, "s") / "f.txt").write_text("x\n")
    record = api.commit("kept", "a", lane="s", tags=("t",), cost=Cost(tokens_in=5), auto_accept=True)
    stored = transitions.load(api.ctx, record["to"])
    assert stored.status == "accepted" and stored.intent == Intent(prompt="kept", agent_id="a", tags=("t",))
    assert stored.cost.tokens_in == 5


def test_a_lane_deleted_while_its_commits_gates_run_exits_3_and_keeps_the_attempt(api, repo, tmp_path):
    """The probe's nit (4.4): `lane delete --force` rejects the pending proposal (and keeps it); the
    committer, whose gate was running, lost a race rather than gave bad input: exit 3, not 1."""
    from test_index_locks import wait_for

    started, release = tmp_path / "gate-started", tmp_path / "gate-may-finish"
    declare(api, repo, gate("held", f"import os, pathlib, time\npathlib.Path({str(started)!r}).touch()\n"
                                    f"while not os.path.exists({str(release)!r}): time.sleep(0.01)\n"))
    api.lane_create("s")
    (workspace(repo, "s") / "w.txt").write_text("w\n")
    [committer] = start_commits(workspace(repo, "s"), 1)
    try:
        wait_for(started)  # the commit is proposed and its gate runs
        deleted = run_cli("lane", "delete", "s", "--force", "--json", cwd=repo)
        assert deleted.code == 0, deleted.err
    finally:
        release.touch()
    out, err = committer.communicate(timeout=120)
    assert committer.returncode == 3 and json.loads(out)["error"] == "decided_meanwhile", (out, err)
    [kept] = git("for-each-ref", "--format=%(refname)", "refs/lanes/rejected", cwd=repo).split()
    assert git("show", f"{kept}:w.txt", cwd=repo) == "w\n"
