"""Check and charge are one step: concurrent calls of one run never overshoot its budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import Result, git, run_cli
from hook_helpers import bash, claude, decision, hook, lane, run_id, set_policy

CALLS = 10
LEFT = 3


@pytest.mark.slow
def test_concurrent_calls_admit_exactly_what_the_budget_holds(repo):
    set_policy(repo, f"[budget]\nphases = {{ plan = {LEFT + 2}, execute = 40 }}\n[phases]\nread_only = []\n")
    ws = lane(repo)
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "warm-1")))[0] == "allow"
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "warm-2")))[0] == "allow"
    # Every process is started and parked on its stdin before any payload is sent, so the calls race for
    # the budget for real rather than one after another.
    procs = [subprocess.Popen([sys.executable, "-m", "git_lanes", "hook", "claude", "PreToolUse"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ)) for _ in range(CALLS)]
    assert all(p.poll() is None for p in procs), "a hook finished before its payload was sent"
    for number, proc in enumerate(procs):
        proc.stdin.write(json.dumps(bash(ws, "git status", f"toolu_race_{number}")))
        proc.stdin.close()
    results = []
    for proc in procs:
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=120)
        results.append(decision(Result(proc.returncode, out, err)))
    allowed = [r for r in results if r[0] == "allow"]
    denied = [r for r in results if r[0] == "deny"]
    assert len(allowed) == LEFT, results
    assert len(denied) == CALLS - LEFT and all("step budget of phase plan is spent" in r for _, r in denied)
    run = run_id(ws)
    shown = run_cli("run", "show", run, "--json", cwd=ws).json
    assert shown["budget"]["plan"]["spent"] == LEFT + 2 and shown["calls"] == LEFT + 2
    assert shown["blocked"] == CALLS - LEFT
    types = [e["type"] for e in run_cli("run", "events", run, "--json", cwd=ws).json]
    assert types.count("tool_attempted") == LEFT + 2 and types.count("tool_blocked") == CALLS - LEFT
    assert git("fsck", "--strict", cwd=repo) == ""


@pytest.mark.slow
def test_concurrent_sessions_each_get_their_own_run(repo):
    ws = lane(repo)
    procs = [subprocess.Popen([sys.executable, "-m", "git_lanes", "hook", "claude", "UserPromptSubmit"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    for number, proc in enumerate(procs):
        proc.stdin.write(json.dumps(claude("UserPromptSubmit", ws, f"session-{number}", prompt=f"task {number}")))
        proc.stdin.close()
    assert all(p.wait(timeout=120) == 0 for p in procs)
    rows = run_cli("run", "list", "--json", cwd=ws).json
    assert sorted(r["agent"] for r in rows) == [f"session-{n}" for n in range(6)]
