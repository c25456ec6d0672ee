"""Gate scoping: `on` says which accepts a gate judges (a lane's own commits, promotions), `into` which lanes'
(globs); the default stays every accept on every lane. `git lanes gates` lists them with what they guard."""

from __future__ import annotations

import pytest
from conftest import run_cli, workspace
from promotion_fixtures import edit, head
from test_gates import AGENT, declare, gate

from git_lanes.domain.gates import Gate, parse
from git_lanes.errors import UserError

FAIL = "import sys; print('suite failed'); sys.exit(1)"


def test_parse_reads_on_and_into_with_every_accept_as_the_default():
    first, second = parse('[[gate]]\nname = "a"\ncommand = "x"\n'
                          '[[gate]]\nname = "b"\ncommand = "y"\non = ["promote"]\ninto = ["main", "release/*"]\n')
    assert (first.on, first.into) == (("commit", "promote"), ("*",))
    assert (second.on, second.into) == (("promote",), ("main", "release/*"))
    assert second.guards("promote", "release/1.0") and second.guards("promote", "main")
    assert not second.guards("commit", "main") and not second.guards("promote", "feature/a")
    assert Gate("c", "z").guards("commit", "any/lane")


@pytest.mark.parametrize("options, problem", [
    ('on = ["merge"]', "on must list some of 'commit', 'promote', not 'merge'"),
    ('on = []', "on must list some of"),
    ('on = "promote"', "on must be a list of non-empty strings"),
    ('into = []', "into must name at least one lane"),
    ('into = [""]', "into must be a list of non-empty strings"),
])
def test_bad_scopes_are_refused_with_one_line(options, problem):
    with pytest.raises(UserError) as info:
        parse(f'[[gate]]\nname = "a"\ncommand = "x"\n{options}\n')
    assert problem in info.value.message and info.value.code == "invalid_gates"


def test_a_promote_gate_lets_lane_commits_through_and_stops_the_promotion(api, repo):
    declare(api, repo, gate("suite", FAIL, on=["promote"]))
    api.lane_create("a")
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    committed = run_cli("commit", "-m", "wip", "--auto-accept", "--json", cwd=workspace(repo, "a"), env=AGENT)
    assert committed.code == 0, committed.err
    assert committed.json["status"] == "accepted" and committed.json["evaluations"] == []
    before = head(repo, "main")
    promoted = run_cli("promote", "a", "--auto-accept", "--json", cwd=repo, env=AGENT)
    assert promoted.code == 4, promoted.err
    assert promoted.json["transition"]["evaluations"][0]["gate"] == "suite"
    assert head(repo, "main") == before


def test_into_limits_a_gate_to_the_lanes_it_names(api, repo):
    declare(api, repo, gate("release-suite", FAIL, into=["release/*"]))
    api.lane_create("release/1")
    api.lane_create("a")
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    assert api.commit("wip", "coder", lane="a", auto_accept=True)["status"] == "accepted"
    assert run_cli("promote", "a", "--auto-accept", "--json", cwd=repo, env=AGENT).code == 0  # into main: free
    promoted = run_cli("promote", "a", "--into", "release/1", "--auto-accept", "--json", cwd=repo, env=AGENT)
    assert promoted.code == 4 and promoted.json["transition"]["lane"] == "release/1"


def test_evaluate_runs_only_the_gates_that_judge_the_proposal(api, repo):
    declare(api, repo, gate("promotions", FAIL, on=["promote"]) + gate("commits", "print('ok')", on=["commit"]))
    api.lane_create("a")
    edit(workspace(repo, "a"), {"a.txt": "a\n"})
    proposed = api.commit("wip", "coder", lane="a")
    result = run_cli("evaluate", proposed["id"][:8], "--json", cwd=repo)
    assert result.code == 0, result.err
    assert [e["gate"] for e in result.json["evaluations"]] == ["commits"]


def test_gates_lists_what_each_gate_guards(api, repo):
    declare(api, repo, gate("suite", "pass", on=["promote"], into=["main"]) + gate("lint", "pass", required=False))
    listed = run_cli("gates", "--json", cwd=repo)
    assert listed.code == 0, listed.err
    assert [(g["name"], g["on"], g["into"], g["required"]) for g in listed.json] == [
        ("suite", ["promote"], ["main"], True), ("lint", ["commit", "promote"], ["*"], False)]
    text = run_cli("gates", cwd=repo)
    assert "suite" in text.out and "on promote" in text.out and "into main" in text.out
    only = run_cli("gates", "--lane", "feature/x", "--on", "commit", "--json", cwd=repo)
    assert [g["name"] for g in only.json] == ["lint"]
    invalid = run_cli("gates", "--lane", "a..b", cwd=repo)
    assert invalid.code == 1 and "invalid lane name" in invalid.err
