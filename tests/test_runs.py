"""Runs through the CLI and the API: every command with --json and stable exit codes, a log any git reads
(git log, git fsck, dulwich), that survives packing and travels with sync."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, run_cli, workspace
from gitserver import clone, make_origin, server  # noqa: F401  (server is a fixture)
from hook_helpers import bash, decision, hook, lane

from git_lanes.api import Lanes
from git_lanes.errors import UserError


def test_run_commands_round_trip(repo):
    ws = lane(repo)
    task = run_cli("task", "create", "Login flow", "--json", cwd=repo).json["task"]
    run = run_cli("run", "start", "--agent", "coder-1", "--task", task[:6], "--goal", "Add login", cwd=ws)
    assert run.code == 0 and len(run.out.strip()) == 16
    run_id = run.out.strip()
    shown = run_cli("run", "show", run_id[:6], "--json", cwd=repo).json
    assert (shown["agent"], shown["lane"], shown["task"], shown["goal"], shown["phase"]) == \
        ("coder-1", "feature", task, "Add login", "plan")
    assert (shown["status"], shown["state"]) == ("active", "active")  # no agent process: a session drives it
    assert shown["budget"] == {"plan": {"budget": 15.0, "spent": 0.0, "left": 15.0},
                               "execute": {"budget": 40.0, "spent": 0.0, "left": 40.0},
                               "verify": {"budget": 15.0, "spent": 0.0, "left": 15.0},
                               "ship": {"budget": 8.0, "spent": 0.0, "left": 8.0}}
    assert run_cli("run", "phase", run_id, "execute", "--json", cwd=repo).json["phase"] == "execute"
    bad_phase = run_cli("run", "phase", run_id, "deploy", "--json", cwd=repo)
    assert bad_phase.code == 1 and bad_phase.json["error"] == "unknown_phase"
    assert run_cli("run", "list", "--json", cwd=repo).json[0]["id"] == run_id
    assert "coder-1" in run_cli("run", "list", cwd=repo).out
    assert "phase execute" in run_cli("run", "show", run_id, cwd=repo).out
    ended = run_cli("run", "end", run_id, "--reason", "done", "--json", cwd=repo).json
    assert ended["status"] == "ended" and not ended["already_ended"]
    assert run_cli("run", "end", run_id, "--json", cwd=repo).json["already_ended"]
    assert run_cli("run", "list", "--active", "--json", cwd=repo).json == []
    assert run_cli("run", "show", run_id, cwd=repo).out.startswith(f"run {run_id}  ended  agent coder-1")
    events = run_cli("run", "events", run_id, "--json", cwd=repo).json
    assert [e["type"] for e in events] == ["run_start", "phase", "run_end"]
    assert events[1]["seq"] == 2 and events[1]["elapsed"] >= 0
    assert run_cli("run", "phase", run_id, "verify", cwd=repo).code == 3  # ended: stale state


def test_unknown_and_ambiguous_runs(repo):
    missing = run_cli("run", "show", "abcd", "--json", cwd=repo)
    assert missing.code == 1 and missing.json["error"] == "unknown_run"
    assert run_cli("run", "show", "not-hex!", cwd=repo).code == 1



def test_a_run_started_without_an_agent_works_as_the_task_owner_or_the_lane_agent(repo):
    """`run start [--agent A]`: without one the run is its task owner's, else the lane's one live agent's;
    with neither to tell, it is refused in one line (exit 1), starting nothing."""
    ws = lane(repo)
    refused = run_cli("run", "start", "--goal", "Add login", "--json", cwd=ws)
    assert refused.code == 1 and refused.json["error"] == "no_agent", refused.out + refused.err
    assert "lane 'feature' is assigned to no live agent" in refused.json["message"]
    assert run_cli("run", "list", "--json", cwd=repo).json == []
    assert run_cli("agent", "register", "coder-1", "--lane", "feature", cwd=repo).code == 0
    assert run_cli("run", "show", run_cli("run", "start", "--goal", "Add login", cwd=ws).out.strip(), "--json",
                   cwd=repo).json["agent"] == "coder-1"
    task = run_cli("task", "create", "Login flow", "--json", cwd=repo).json["task"]
    assert run_cli("task", "claim", task, "--agent", "coder-2", cwd=repo).code == 0
    started = run_cli("run", "start", "--task", task[:6], "--json", cwd=ws).json
    assert (started["agent"], started["task"], started["lane"]) == ("coder-2", task, "feature")
    assert run_cli("run", "start", "--lane", "main", cwd=repo).code == 1  # main: no agent is assigned to it


def test_a_run_with_an_empty_goal_is_refused(repo):
    """`run start --goal ""` started a run with no goal, though one was asked for: each briefing then shows
    none. An empty or blank goal is one line and exit 1, starting nothing, in every face."""
    for goal in ("", "  \n"):
        result = run_cli("run", "start", "--agent", "coder-1", "--goal", goal, "--json", cwd=repo)
        assert result.code == 1 and result.json["error"] == "invalid_reason", result.out
        assert result.json["message"] == "the goal is empty", result.json
        with pytest.raises(UserError, match="the goal is empty"), Lanes(repo) as lanes:
            lanes.run_start("coder-1", goal=goal, lane="main")
    assert run_cli("run", "list", "--json", cwd=repo).json == []


def test_stats_group_and_filter(repo):
    ws = lane(repo)
    for session in ("s1", "s2"):
        assert decision(hook("claude", "PreToolUse", bash(ws, "ls", session=session)))[0] == "allow"
    assert decision(hook("claude", "PreToolUse", bash(ws, "curl x", "t2", session="s1")))[0] == "deny"
    by_agent = run_cli("run", "stats", "--json", cwd=repo).json
    assert [(r["agent"], r["calls"], r["blocked"]) for r in by_agent["rows"]] == [("s1", 1, 1), ("s2", 1, 0)]
    assert by_agent["totals"]["calls"] == 2
    by_lane = run_cli("run", "stats", "--by", "lane", "--json", cwd=repo).json["rows"]
    assert [(r["lane"], r["runs"]) for r in by_lane] == [("feature", 2)]
    assert run_cli("run", "stats", "--since", "2999-01-01", "--json", cwd=repo).json["rows"] == []
    assert run_cli("run", "stats", "--since", "yesterday-ish", cwd=repo).code == 1
    assert "total" in run_cli("run", "stats", "--by", "day", cwd=repo).out


def test_the_log_is_plain_git_and_survives_packing(repo):
    ws = lane(repo)
    for number in range(3):
        hook("claude", "PreToolUse", bash(ws, "ls", f"t{number}"))
    run = run_cli("run", "list", "--json", cwd=repo).json[0]["id"]
    ref = f"refs/lanes/runs/{run}"
    assert len(git("log", "--oneline", ref, cwd=repo).splitlines()) == 4
    assert '"phase": "plan"' in git("show", f"{ref}:state.json", cwd=repo)
    assert len(git("reflog", "show", "--format=%H", ref, cwd=repo).splitlines()) == 4
    git("gc", "--quiet", "--prune=now", cwd=repo)
    git("pack-refs", "--all", cwd=repo)
    assert not (repo / ".git" / ref).exists(), "the ref was not packed"
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "t9")))[0] == "allow"
    assert run_cli("run", "show", run, "--json", cwd=repo).json["calls"] == 4
    assert git("fsck", "--strict", cwd=repo) == ""

    from dulwich.repo import Repo  # an independent reader of what we wrote

    dulwich_repo = Repo(str(repo))
    head = dulwich_repo.refs[ref.encode()]
    messages = []
    while True:
        commit = dulwich_repo[head]
        messages.append(commit.message.decode())
        if not commit.parents:
            break
        head = commit.parents[0]
    assert len(messages) == 5 and messages[-1].startswith("sess-1: start in feature")


def test_run_logs_travel_with_sync(tmp_path: Path, server):  # noqa: F811
    url = server.bare("project")
    origin = make_origin(tmp_path, url)
    ws = workspace(origin, "feature")
    Lanes(origin).lane_create("feature")
    hook("claude", "PreToolUse", bash(ws, "ls"))
    run = run_cli("run", "list", "--json", cwd=origin).json[0]["id"]
    Lanes(origin).sync()
    other = clone(tmp_path, url, "machine-b")
    assert run_cli("pull", cwd=other).code == 0
    shown = run_cli("run", "show", run, "--json", cwd=other)
    assert shown.code == 0 and shown.json["calls"] == 1, shown.err
    hook("claude", "PreToolUse", bash(ws, "git status", "t2"))
    report = Lanes(origin).sync()
    assert any(m["kind"] == "run" for m in report["went_out"]), report
    Lanes(other).sync()
    assert run_cli("run", "show", run, "--json", cwd=other).json["calls"] == 2


@pytest.mark.parametrize("damage", ["state", "ref"])
def test_a_damaged_log_denies_and_doctor_says_so(repo, damage):
    ws = lane(repo)
    hook("claude", "PreToolUse", bash(ws, "ls"))
    run = run_cli("run", "list", "--json", cwd=repo).json[0]["id"]
    ref = repo / ".git" / "refs" / "lanes" / "runs" / run
    if damage == "ref":
        ref.write_text("garbage\n")
    else:
        blob = _write_blob(repo, b'{"format": 9}')
        tree = _mktree(repo, blob)
        commit = git("commit-tree", tree, "-p", ref.read_text().strip(), "-m", "x", cwd=repo).strip()
        ref.write_text(commit + "\n")
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, "ls", "t2")))
    assert verdict == "deny" and "git-lanes" in reason
    assert run_cli("doctor", "--check", "hooks.runs", cwd=repo).code == 1


def _write_blob(repo: Path, data: bytes) -> str:
    import subprocess

    return subprocess.run(["git", "hash-object", "-w", "--stdin"], input=data, cwd=repo, capture_output=True,
                          check=True).stdout.decode().strip()


def _mktree(repo: Path, blob: str) -> str:
    import subprocess

    return subprocess.run(["git", "mktree"], input=f"100644 blob {blob}\tstate.json\n".encode(), cwd=repo,
                          capture_output=True, check=True).stdout.decode().strip()


def test_events_follow_prints_new_events_until_the_run_ends(repo):
    import json
    import os
    import subprocess
    import sys
    import time

    run = run_cli("run", "start", "--agent", "watcher", cwd=repo).out.strip()
    follower = subprocess.Popen([sys.executable, "-m", "git_lanes", "run", "events", run, "--follow", "--json"],
                                cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ))
    first = json.loads(follower.stdout.readline())
    assert first["type"] == "run_start" and follower.poll() is None, "the follower stopped before the run ended"
    assert run_cli("run", "phase", run, "execute", cwd=repo).code == 0
    assert json.loads(follower.stdout.readline())["type"] == "phase"
    time.sleep(0.2)
    assert follower.poll() is None
    assert run_cli("run", "end", run, cwd=repo).code == 0
    assert json.loads(follower.stdout.readline())["type"] == "run_end"
    assert follower.wait(timeout=60) == 0


def test_a_run_started_inside_the_git_directory_is_on_no_lane(repo):
    """`run start` (and a hook's first call) took a session working in `.git/hooks` for one on the trunk, so
    its writes were held to the trunk's rules there; `commit` refuses that folder as in no work tree. A git
    directory, the main one or a lane's own under `worktrees/`, is in no lane; the work tree still is."""
    ws = lane(repo)
    private = Path(git("rev-parse", "--git-dir", cwd=ws).strip())
    for cwd, expected in ((repo / ".git" / "hooks", None), (private, None), (repo, "main")):
        run = run_cli("run", "start", "--agent", "coder-1", cwd=cwd).out.strip()
        assert run_cli("run", "show", run, "--json", cwd=repo).json["lane"] == expected, cwd
