"""The task pipeline (`git lanes spawn TASK --pipeline`) with the fake agent CLI: plan (read-only) → execute →
verify (the trunk's gates) → fix → ship, each stage a run event; a pipeline killed mid-stage resumes from its
briefing."""

from __future__ import annotations

import os
import signal
import sys

from conftest import git, run_cli, workspace
from spawn_helpers import PATIENCE, finished, journal, show, use_fake_agent, wait_for

from git_lanes.store import processes

CHECK = ("import pathlib, sys\n"
         "p = pathlib.Path('src/greet.py')\n"
         "ok = p.exists() and 'correct' in p.read_text()\n"
         "print('greet.py is ' + ('right' if ok else 'wrong: it must say correct'))\n"
         "sys.exit(0 if ok else 1)\n")
GATE = f'\n[[gate]]\nname = "check"\ncommand = ["{sys.executable}", "check.py"]\n'
PLAN = [{"read": "README.md"}, {"todo": ["write src/greet.py", "make it correct"]},
        {"write": "notes.txt", "content": "not in the plan phase"}]


def pipeline_repo(repo, tmp_path, stages: dict) -> tuple:
    (repo / "check.py").write_text(CHECK)
    git("add", "check.py", cwd=repo)
    path = use_fake_agent(repo, tmp_path, {"plan": PLAN, **stages}, extra=GATE)
    task = run_cli("task", "create", "Greet people", "--json", cwd=repo).json["task"]
    return path, task


def stages_of(state: dict) -> list[tuple[str, str]]:
    return [(h["stage"], h["status"]) for h in state["pipeline"]["history"]]


def test_a_pipeline_that_passes_first_time_plans_read_only_executes_verifies_and_ships(repo, tmp_path):
    path, task = pipeline_repo(repo, tmp_path, {"execute": [{"write": "src/greet.py", "content": "correct\n"}]})
    result = run_cli("spawn", task[:6], "--pipeline", "--agent", "coder-1", "--wait", "--json", cwd=repo, timeout=PATIENCE)
    assert result.code == 0, result.err
    run = result.json["run"]
    state = show(repo, run)
    assert stages_of(state) == [("plan", "started"), ("plan", "done"), ("execute", "started"), ("execute", "done"),
                                ("verify", "started"), ("verify", "passed"), ("ship", "started"), ("ship", "done")]
    assert state["status"] == "ended"
    assert [s["step"] for s in state["pipeline"]["plan"]] == ["write src/greet.py", "make it correct"]
    # the plan phase is read-only: its write was denied by the hooks, and nothing of it reached the lane
    denied = journal(path, run, "denied")
    assert len(denied) == 1 and denied[0]["stage"] == "plan" and "read-only" in denied[0]["reason"]
    assert not (workspace(repo, f"task/{task[:8]}") / "notes.txt").exists()
    execute = [r for r in journal(path, run, "session_start") if r["stage"] == "execute"][0]
    assert "1. write src/greet.py" in execute["prompt"]
    # verify ran the trunk's gate on the lane's state and accepted it; ship marked the task done
    verified = state["pipeline"]["verify"]
    assert verified["passed"] and [g["gate"] for g in verified["gates"]] == ["check"]
    lane_head = f"refs/lanes/heads/task/{task[:8]}"
    assert git("show", f"{lane_head}:src/greet.py", cwd=repo) == "correct\n"
    # ship promoted the lane into the trunk through the merge gate, then marked the task done
    assert git("show", "main:src/greet.py", cwd=repo) == "correct\n"
    assert state["pipeline"]["ship"]["promoted"]["status"] == "accepted"
    assert run_cli("task", "show", task, "--json", cwd=repo).json["status"] == "done"
    phases = [e["phase"] for e in run_cli("run", "events", run, "--json", cwd=repo).json if e["type"] == "phase"]
    assert phases == ["execute", "verify", "ship"]


def test_a_pipeline_whose_verify_fails_once_is_fixed_with_the_gate_output_in_the_prompt(repo, tmp_path):
    path, task = pipeline_repo(repo, tmp_path, {"execute": [{"write": "src/greet.py", "content": "wrong\n"}],
                                                "fix": [[{"write": "src/greet.py", "content": "correct\n"}]]})
    result = run_cli("spawn", task, "--pipeline", "--wait", "--json", cwd=repo, timeout=PATIENCE)
    assert result.code == 0, result.err
    run = result.json["run"]
    state = show(repo, run)
    assert stages_of(state)[4:] == [("verify", "started"), ("verify", "failed"), ("fix", "started"), ("fix", "done"),
                                    ("verify", "started"), ("verify", "passed"), ("ship", "started"), ("ship", "done")]
    fix = [r for r in journal(path, run, "session_start") if r["stage"] == "fix"]
    assert len(fix) == 1 and "Fix attempt 1 of 2" in fix[0]["prompt"]
    # `run show` says where the pipeline stands and how it got there (it once showed it in --json only)
    text = run_cli("run", "show", run[:6], cwd=repo).out.splitlines()
    assert "pipeline: ship done, after 1 fix attempt" in text, text
    assert "  plan done -> execute done -> verify failed -> fix done -> verify passed -> ship done" in text, text
    assert "greet.py is wrong: it must say correct" in fix[0]["prompt"]
    assert run_cli("task", "show", task, "--json", cwd=repo).json["status"] == "done"
    rejected = run_cli("history", "--status", "rejected", "--json", cwd=repo).json["transitions"]
    assert len(rejected) == 1 and "gate check failed" in rejected[0]["reason"]


def test_a_pipeline_that_fails_three_times_blocks_the_task_with_a_board_question(repo, tmp_path):
    wrong = [{"write": "src/greet.py", "content": "still wrong\n"}]
    path, task = pipeline_repo(repo, tmp_path, {"execute": wrong, "fix": [wrong, wrong]})
    result = run_cli("spawn", task, "--pipeline", "--wait", "--json", cwd=repo, timeout=PATIENCE)
    assert result.code == 4 and result.json["problem"]["error"] == "gate_failed", result.err
    run = result.json["run"]
    state = show(repo, run)
    assert [s for s in stages_of(state) if s[0] == "verify"] == [("verify", "started"), ("verify", "failed")] * 3 + \
        [("verify", "blocked")]
    assert [r["attempt"] for r in journal(path, run, "session_start") if r["stage"] == "fix"] == [1, 2]
    assert state["status"] == "active"  # a person may fix it and resume
    shown = run_cli("task", "show", task, "--json", cwd=repo).json
    assert shown["status"] == "blocked" and "fix attempt" in shown["blocked_reason"]
    posts = run_cli("board", "read", "--json", cwd=repo).json["posts"]
    questions = [p for p in posts if p["kind"] == "question"]
    assert len(questions) == 1 and task[:8] in questions[0]["text"] and "check" in questions[0]["text"]


def test_a_killed_pipeline_resumes_its_stage_from_the_briefing(repo, tmp_path):
    path, task = pipeline_repo(repo, tmp_path, {
        "execute": [{"write": "src/greet.py", "content": "correct\n"}, {"hang": {}}],
        "execute_resumed": [{"read": "src/greet.py"}]})
    spawned = run_cli("spawn", task, "--pipeline", "--json", cwd=repo)
    assert spawned.code == 0, spawned.err
    run = spawned.json["run"]
    wait_for(lambda: journal(path, run, "hanging"), "the execute stage to hang")
    state = show(repo, run)
    group, boss = state["process"]["pgid"], state["supervisor"]["pid"]
    os.kill(boss, signal.SIGKILL)  # a crash, not a stop: nothing gets to record anything
    os.killpg(group, signal.SIGKILL)
    wait_for(lambda: not processes.running(boss) and not processes.group_members(group), "the kill")
    assert show(repo, run)["pipeline"]["status"] == "started"

    resumed = run_cli("run", "resume", run[:8], "--spawn", "--json", cwd=repo)
    assert resumed.code == 0, resumed.err
    wait_for(lambda: finished(repo, run), "the resumed pipeline to finish")
    state = show(repo, run)
    assert state["status"] == "ended", state["pipeline"]
    assert [r["stage"] for r in journal(path, run, "session_start")] == ["plan", "execute", "execute"]
    again = journal(path, run, "session_start")[-1]
    assert again["prompt"].startswith("Stage: execute (resumed)")
    assert "src/greet.py" in again["prompt"] and "briefing" in again["prompt"]
    assert ("execute", "resumed") in stages_of(state)
    assert run_cli("task", "show", task, "--json", cwd=repo).json["status"] == "done"


def test_a_following_pipeline_spawns_the_tasks_its_done_task_made_ready(repo, tmp_path):
    from git_lanes.api import Lanes
    from git_lanes.cli import supervise
    from git_lanes.cli.hook import command_prefix

    path, foundation = pipeline_repo(repo, tmp_path, {"execute": [{"write": "src/greet.py", "content": "correct\n"}]})
    features = [run_cli("task", "create", f"Feature {n}", "--depends", foundation, "--json", cwd=repo).json["task"]
                for n in (1, 2)]
    first = Lanes(repo).spawn(foundation, use_pipeline=True, queue=True, follow=True, hook_prefix=command_prefix(),
                              supervisor=supervise.argv)["run"]
    wait_for(lambda: finished(repo, first), "the foundation's pipeline to finish")
    followed = show(repo, first)["pipeline"]["ship"]["followed"]
    assert sorted(f["task"] for f in followed) == sorted(features), followed
    runs = [f["run"] for f in followed]
    wait_for(lambda: all(finished(repo, run) for run in runs), "the features' pipelines to finish")
    for run in runs:
        state = show(repo, run)
        assert state["status"] == "ended" and state["launch"]["follow"] and state["pipeline"]["ship"]["followed"] == []
    assert all(run_cli("task", "show", t, "--json", cwd=repo).json["status"] == "done" for t in features)
    # the features started only once the foundation was done: after its last agent session, in the journal's order
    rows = journal(path)
    last_of_foundation = max(i for i, r in enumerate(rows) if r["run"] == first)
    assert min(i for i, r in enumerate(rows) if r["run"] in runs) > last_of_foundation
