"""`git lanes spawn`, `ps`, `stop`, `tell`, `logs` with the fake agent CLI (tests/fake_agent.py): real
processes, real hooks, never a model."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import run_cli, workspace
from hook_helpers import set_policy
from spawn_helpers import PATIENCE, finished, journal, most_at_once, show, use_fake_agent, wait_for

from git_lanes.store import processes


def spawned_run(result) -> str:
    assert result.code == 0, result.err
    return result.json["run"]


def test_spawn_runs_the_agent_in_its_lane_with_hooks_scoped_to_the_workspace(repo, tmp_path, hermetic):
    user_settings = hermetic / ".claude" / "settings.json"
    user_settings.parent.mkdir()
    user_settings.write_text('{"model": "mine"}\n')
    path = use_fake_agent(repo, tmp_path, {"default": [{"read": "README.md"}, {"usage": {"input": 1000, "output": 200}},
                                                       {"write": "src/greet.py", "content": "hello\n"}]},
                          extra='\n[setup]\nports = 1\nenv = { PORT = "{port0}" }\n')
    result = run_cli("spawn", "--prompt", "Write a greeting", "--agent", "coder-1", "--wait", "--json", cwd=repo, timeout=PATIENCE)
    run = spawned_run(result)
    ws = workspace(repo, "agent/coder-1")
    local = json.loads((ws / ".claude" / "settings.local.json").read_text())
    assert {"PreToolUse", "PostToolUse", "Stop", "SessionStart"} <= set(local["hooks"])
    assert user_settings.read_text() == '{"model": "mine"}\n'
    assert not (repo / ".claude").exists()
    # the agent ran in the workspace, as the run, and every call went through the hooks into the run's log
    rows = journal(path, run)
    assert [r["tool"] for r in rows if r["event"] == "tool"] == ["Read", "Write"]
    started = journal(path, run, "session_start")[0]
    assert started["cwd"] == str(ws) and started["env"]["GIT_LANES_RUN"] == run
    assert started["env"]["GIT_LANES_AGENT"] == "coder-1" and started["env"]["GIT_LANES_LANE"] == "agent/coder-1"
    # the lane's setup was applied: its port is reserved and in the agent's environment
    port = run_cli("lane", "env", "agent/coder-1", "--json", cwd=repo).json["ports"][0]
    assert started["env"]["PORT"] == str(port)
    assert (ws / "src" / "greet.py").read_text() == "hello\n"
    state = show(repo, run)
    assert state["status"] == "ended" and state["exit"]["code"] == 0 and state["lane"] == "agent/coder-1"
    assert state["calls"] == 2 and state["tokens"]["input"] == 1000 and state["launch"]["cli"] == "claude"
    # the turn became a proposal of the lane: the workspace's hook settings are not part of it
    proposal = state["transitions"][-1]
    changes = run_cli("show", proposal, "--json", cwd=repo).json["changes"]
    assert [c["path"] for c in changes] == ["src/greet.py"]
    assert "fake agent: run" in run_cli("logs", run, cwd=repo).out


def test_spawn_refuses_what_it_cannot_do_and_makes_nothing(repo, tmp_path):
    use_fake_agent(repo, tmp_path, {})
    lanes_before = run_cli("lane", "list", "--json", cwd=repo).json
    assert run_cli("spawn", cwd=repo).code == 2  # the shape: nothing named to do
    assert run_cli("spawn", "--prompt", "x", "--cli", "custom", cwd=repo).err.count("no command") == 1
    assert run_cli("spawn", "--prompt", "x", "--pipeline", cwd=repo).code == 2
    assert run_cli("spawn", "beef", cwd=repo).code == 1
    # an empty value given is refused as given, not taken for the default (`--lane "$LANE"` unset made
    # agent/claude-<run> and started the agent there)
    for option, code in (("--lane", "invalid_lane_name"), ("--agent", "invalid_agent")):
        refused = run_cli("spawn", "--prompt", "x", option, "", "--json", cwd=repo)
        assert refused.code == 1 and refused.json["error"] == code, refused.err
    assert run_cli("lane", "list", "--json", cwd=repo).json == lanes_before
    assert run_cli("run", "list", "--json", cwd=repo).json == []


def test_spawn_refuses_an_agent_program_that_is_not_there_and_makes_nothing(repo, tmp_path):
    """A spawn whose agent command names a program not on PATH (Claude Code not installed, a typo in
    `[agent.custom] command`) said "exited", exit 0, and left a lane, a claimed task and a run behind; the
    reason was only in `git lanes logs`. It is refused first, in one line, exit 1, and nothing is made."""
    from hook_helpers import set_policy

    set_policy(repo, '[agent.custom]\ncommand = ["no-such-agent-cli", "-p", "{prompt}"]\n')
    lanes_before = run_cli("lane", "list", "--json", cwd=repo).json
    task = run_cli("task", "create", "Add login", cwd=repo).out.strip()
    for args in (("--prompt", "x"), (task[:6],)):
        result = run_cli("spawn", *args, "--cli", "custom", cwd=repo)
        assert result.code == 1, (result.out, result.err)
        assert result.err.splitlines()[0] == "git-lanes: error: cannot start the custom agent: " \
                                             "no-such-agent-cli is not on PATH", result.err
        assert "Traceback" not in result.err and "[agent.custom]" in result.err
    assert run_cli("spawn", "--prompt", "x", "--cli", "custom", "--json", cwd=repo).json["error"] == "agent_not_found"
    assert run_cli("lane", "list", "--json", cwd=repo).json == lanes_before
    assert run_cli("run", "list", "--json", cwd=repo).json == []
    assert run_cli("task", "show", task, "--json", cwd=repo).json["status"] == "open"


def test_stop_ends_the_whole_process_group_and_the_supervisor(repo, tmp_path):
    path = use_fake_agent(repo, tmp_path, {"default": [{"read": "README.md"},
                                                       {"hang": {"ignore_term": True, "child": True}}]})
    run = spawned_run(run_cli("spawn", "--prompt", "Hang around", "--json", cwd=repo))
    wait_for(lambda: journal(path, run, "hanging"), "the agent to hang")
    state = show(repo, run)
    group, boss = state["process"]["pgid"], state["supervisor"]["pid"]
    assert len(processes.group_members(group)) == 2, "the agent and its child run"
    assert processes.running(boss)
    listed = run_cli("ps", "--json", cwd=repo).json
    assert [r["run"] for r in listed] == [run] and listed[0]["state"] == "running"
    assert state["state"] == "running" and state["status"] == "active"

    stopped = run_cli("stop", run[:6], "--reason", "wrong approach", "--json", cwd=repo)
    assert stopped.code == 0, stopped.err
    assert stopped.json["signal"] == "SIGKILL"  # it ignores SIGTERM
    assert processes.group_members(group) == [] and not processes.running(boss)
    state = show(repo, run)
    assert state["stop"]["reason"] == "wrong approach" and state["stop"]["done"]
    assert state["exit"]["signal"] == 9 and not state["process"]
    # `run show` and `run list` once said "active" here, where `ps --all` says "stopped": the run has not
    # ended (its status), but it is stopped (its state), and every listing says so
    assert (state["state"], state["status"]) == ("stopped", "active")
    assert run_cli("run", "show", run, cwd=repo).out.startswith(f"run {run}  stopped  agent ")
    assert run_cli("run", "list", cwd=repo).out.startswith(f"{run[:8]}  stopped  ")
    assert [r["state"] for r in run_cli("ps", "--all", "--json", cwd=repo).json] == ["stopped"]
    assert run_cli("ps", "--json", cwd=repo).json == []
    again = run_cli("stop", run, "--json", cwd=repo)
    assert again.code == 0 and again.json["stopped"] is False


def test_stop_ends_the_processes_that_left_the_agents_process_group(repo, tmp_path):
    """An agent's server started with `setsid` leaves the agent's process group, and a daemon (double fork,
    an empty environment) is not even the agent's child any more: `stop` signalled the group alone, and both
    outlived the run."""
    path = use_fake_agent(repo, tmp_path, {"default": [{"hang": {"escape": True}}]})
    run = spawned_run(run_cli("spawn", "--prompt", "Start a server", "--json", cwd=repo))
    hanging = wait_for(lambda: journal(path, run, "hanging"), "the agent to hang")[0]
    escaped = [hanging["setsid"], hanging["daemon"]]
    try:
        group = show(repo, run)["process"]["pgid"]
        assert all(processes.running(pid) for pid in escaped), "both run"
        assert not set(escaped) & set(processes.group_members(group)), "neither is in the agent's group"
        assert all(os.getsid(pid) != os.getsid(group) for pid in escaped), "each left the agent's session"
        stopped = run_cli("stop", run, "--json", cwd=repo)
        assert stopped.code == 0, stopped.err
        assert [pid for pid in escaped if processes.running(pid)] == []
        assert processes.group_members(group) == []
    finally:
        for pid in escaped:
            if processes.running(pid):
                os.kill(pid, 9)


def test_tell_reaches_the_model_at_a_tool_call_and_at_a_stop(repo, tmp_path):
    gate = tmp_path / "go"
    path = use_fake_agent(repo, tmp_path, {"default": [{"wait_for_message": 120}, {"await_file": str(gate)}]})
    run = spawned_run(run_cli("spawn", "--prompt", "Listen", "--json", cwd=repo))
    wait_for(lambda: journal(path, run, "waiting"), "the agent to wait")
    told = run_cli("tell", run, "Use the session helper", "--from", "alice", "--json", cwd=repo)
    assert told.code == 0 and told.json["live"] is True
    wait_for(lambda: journal(path, run, "awaiting"), "the message to arrive")
    assert "Message from alice (git lanes tell): Use the session helper" in journal(path, run, "told")[0]["text"]
    # a message queued while the model works without tools arrives when it stops: the Stop hook blocks with it
    assert run_cli("tell", run, "Also update the README", cwd=repo).code == 0
    follower = subprocess.Popen([sys.executable, "-m", "git_lanes", "logs", run[:8], "--follow"], cwd=repo,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: "fake agent: run" in run_cli("logs", run, cwd=repo).out, "the agent's first output")
    assert follower.poll() is None, "logs --follow keeps going while the agent runs"
    gate.touch()
    wait_for(lambda: finished(repo, run), "the run to finish")
    followed, _ = follower.communicate(timeout=PATIENCE)  # it ends by itself once the agent and supervisor have
    assert follower.returncode == 0 and f"fake agent: run {run[:8]}" in followed
    at_stop = [r for r in journal(path, run, "told") if r["via"] == "Stop"]
    assert len(at_stop) == 1 and "Also update the README" in at_stop[0]["text"]
    assert show(repo, run)["inbox"] == []


def test_five_tasks_never_run_more_than_max_parallel_agents_at_once(repo, tmp_path):
    gate, starts = tmp_path / "go", tmp_path / "starts"
    path = use_fake_agent(repo, tmp_path, {"default": [{"rendezvous": {"file": str(starts), "count": 2,
                                                                       "timeout": PATIENCE}},
                                                       {"await_file": str(gate)}]}, max_parallel=2)
    tasks = [run_cli("task", "create", f"Part {n}", "--json", cwd=repo).json["task"] for n in range(5)]
    first = [run_cli("spawn", task, "--json", cwd=repo) for task in tasks[:2]]
    assert [r.json["state"] for r in first] == ["running", "running"], [r.err for r in first]
    refused = run_cli("spawn", tasks[2], "--json", cwd=repo)
    assert refused.code == 3 and refused.json["error"] == "max_parallel"
    queued = [run_cli("spawn", task, "--queue", "--json", cwd=repo) for task in tasks[2:]]
    assert [r.json["state"] for r in queued] == ["queued"] * 3, [r.err for r in queued]
    runs = [spawned_run(r) for r in first + queued]
    wait_for(lambda: starts.exists() and starts.read_text().count("start ") == 2, "two agents to run")
    states = sorted(r["state"] for r in run_cli("ps", "--json", cwd=repo).json)
    assert states == ["queued"] * 3 + ["running"] * 2
    gate.touch()
    wait_for(lambda: all(finished(repo, run) for run in runs), "all five runs to finish")
    # the agents' own record, in the order they wrote it under a lock: never more than two at once
    assert most_at_once(tmp_path / "sessions") == (2, 5)
    assert sorted(r["run"] for r in journal(path, event="exit")) == sorted(runs)
    assert all(show(repo, run)["exit"]["code"] == 0 for run in runs)


def test_spawns_racing_for_the_last_slot_are_refused_not_queued_and_keep_nothing(repo, tmp_path):
    """Each spawn's own check passes (no agent runs yet); the slot is taken under the supervisors' lock, so
    the losers learn of it there: exit 3 as the check would say, their task and lane free for a retry."""
    gate = tmp_path / "go"
    use_fake_agent(repo, tmp_path, {"default": [{"await_file": str(gate)}]}, max_parallel=1)
    tasks = [run_cli("task", "create", f"Part {n}", "--json", cwd=repo).json["task"] for n in range(3)]
    racing = [subprocess.Popen([sys.executable, "-m", "git_lanes", "spawn", task, "--json"], cwd=repo,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for task in tasks]
    results = [(p.wait(timeout=PATIENCE), json.loads(p.communicate()[0])) for p in racing]
    assert sorted(code for code, _ in results) == [0, 3, 3], results
    assert all(out["error"] == "max_parallel" for code, out in results if code == 3)
    winner = next(out["run"] for code, out in results if code == 0)
    losers = [task for task, (code, _) in zip(tasks, results) if code == 3]
    assert [run_cli("task", "show", t, "--json", cwd=repo).json["status"] for t in losers] == ["open", "open"]
    assert [r["run"] for r in run_cli("ps", "--json", cwd=repo).json] == [winner]
    gate.touch()
    wait_for(lambda: finished(repo, winner), "the winner to finish")
    retried = run_cli("spawn", losers[0], "--queue", "--json", cwd=repo)  # nothing of the refusal holds it back
    assert retried.code == 0, retried.err
    wait_for(lambda: finished(repo, retried.json["run"]), "the retry to finish")


def test_whether_a_process_runs_is_told_the_same_way_with_or_without_proc(monkeypatch, tmp_path):
    """stale.alive is the one answer without /proc (and for worktree drafts, gate scratch and publish locks):
    a live process runs, one that exited and was reaped does not."""
    from git_lanes.store import stale

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    for proc in (processes.PROC, tmp_path / "no-proc"):
        monkeypatch.setattr(processes, "PROC", proc)
        assert processes.running(os.getpid()) and not processes.running(child.pid), proc
    assert stale.alive(os.getpid()) and not stale.alive(child.pid)


def test_logs_names_the_run_by_its_full_id_when_given_a_prefix(repo, tmp_path):
    command = json.dumps([sys.executable, "-c", "print('custom agent says hi')"])
    set_policy(repo, f"[agent.custom]\ncommand = {command}\n")
    run = spawned_run(run_cli("spawn", "--prompt", "Say hi", "--cli", "custom", "--wait", "--json", cwd=repo,
                              timeout=PATIENCE))
    shown = run_cli("logs", run[:6], "--json", cwd=repo)
    assert shown.code == 0 and shown.json["run"] == run and "custom agent says hi" in shown.json["log"]
    followed = run_cli("logs", run[:6], "--follow", "--json", cwd=repo, timeout=PATIENCE)
    chunks = [json.loads(line) for line in followed.out.splitlines()]
    assert followed.code == 0 and chunks and {c["run"] for c in chunks} == {run}


def test_logs_of_a_run_spawn_did_not_start_says_so_instead_of_printing_nothing(repo):
    run = run_cli("run", "start", "--agent", "coder-1", "--json", cwd=repo).json["id"]
    for args in (["logs", run[:8]], ["logs", run[:8], "--follow"]):
        result = run_cli(*args, "--json", cwd=repo)
        assert result.code == 1 and result.json["error"] == "not_spawned", (args, result.out, result.err)
        assert "Traceback" not in result.err and "run events" in result.json["hint"]



NESTING_AGENT = """import json, os, pathlib, subprocess, sys, time
out = pathlib.Path(sys.argv[1])
if sys.argv[2] == "outer":  # an agent that spawns an agent of its own, as a person would
    spawned = subprocess.run([sys.executable, "-m", "git_lanes", "spawn", "--prompt", "inner", "--cli", "custom",
                              "--json"], capture_output=True, text=True)
    (out / "inner-run").write_text(json.loads(spawned.stdout)["run"] if spawned.returncode == 0 else spawned.stderr)
else:
    (out / "inner-pid").write_text(str(os.getpid()))
while True:
    time.sleep(1)
"""


def test_stop_leaves_alone_a_run_that_the_stopped_runs_agent_spawned(repo, tmp_path):
    """The processes below a stopped run's agent and supervisor end with it, but not another run's: a spawn
    its agent made has a supervisor of its own (re-parented to this run's supervisor once the spawn command
    exits), and stopping the outer run must leave that run and its agent going."""
    script = tmp_path / "nesting_agent.py"
    script.write_text(NESTING_AGENT)
    command = json.dumps([sys.executable, str(script), str(tmp_path), "{prompt}"])
    set_policy(repo, f"[agent]\nstop_grace = 2\n\n[agent.custom]\ncommand = {command}\n")
    outer = spawned_run(run_cli("spawn", "--prompt", "outer", "--cli", "custom", "--json", cwd=repo))
    inner = wait_for(lambda: (tmp_path / "inner-run").exists() and (tmp_path / "inner-run").read_text(),
                     "the outer agent to spawn the inner one")
    assert len(inner) == 16 and inner != outer, inner
    pid = int(wait_for(lambda: (tmp_path / "inner-pid").exists() and (tmp_path / "inner-pid").read_text(),
                       "the inner agent to start"))
    boss = wait_for(lambda: show(repo, inner)["supervisor"].get("pid"), "the inner run's supervisor")
    try:
        assert processes.running(pid) and processes.running(boss)
        stopped = run_cli("stop", outer, "--json", cwd=repo)
        assert stopped.code == 0 and stopped.json["stopped"], stopped.err
        assert processes.running(pid) and processes.running(boss), "the inner run goes on"
        assert show(repo, inner)["state"] == "running"
    finally:
        assert run_cli("stop", inner, "--json", cwd=repo).code == 0
    assert not processes.running(pid) and not processes.running(boss)
