"""Budgets per lane, task and ticket: set, show (costs rolled up from runs and transitions), clear; the hooks
warn at 80% and block writes and commands at 100%, blocking the task with a board post; a spawned agent whose
budget is spent is stopped."""

from __future__ import annotations

import json

from conftest import git, run_cli
from hook_helpers import bash, claude, decision, hook, lane, set_policy, write
from spawn_helpers import finished, journal, show, use_fake_agent, wait_for


def usage_line(message: str, output_tokens: int, input_tokens: int = 0) -> str:
    return json.dumps({"type": "assistant", "requestId": f"req-{message}", "uuid": message,
                       "message": {"id": message, "type": "message", "role": "assistant", "model": "claude-sonnet-5",
                                   "content": [{"type": "text", "text": "…"}],
                                   "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})


def task_in_lane(repo, ws) -> str:
    task = run_cli("task", "create", "Add login", "--json", cwd=repo).json["task"]
    assert run_cli("task", "claim", task, "--agent", "a1", "--lane", "feature", cwd=repo).code == 0
    return task


def test_budgets_roll_up_from_runs_and_transitions_to_lane_task_and_ticket(repo, tmp_path):
    ws = lane(repo)
    task = task_in_lane(repo, ws)
    ticket = run_cli("ticket", "open", "Login", "--json", cwd=repo).json["ticket"]
    assert run_cli("ticket", "link", ticket, task, cwd=repo).code == 0
    for flags in (["--lane", "feature", "--usd", "1"], ["--task", task[:6], "--tokens", "100000"],
                  ["--ticket", ticket, "--usd", "2", "--tokens", "500000"]):
        assert run_cli("budget", "set", *flags, cwd=repo).code == 0
    # a run of the task in the lane spends $0.0075 (500 output tokens of sonnet) ...
    run = run_cli("run", "start", "--agent", "a1", "--lane", "feature", "--task", task, cwd=ws).out.strip()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(usage_line("m1", 500) + "\n")
    payload = bash(ws, "ls", "t1") | {"transcript_path": str(transcript)}
    assert decision(hook("claude", "PreToolUse", payload, env={"GIT_LANES_RUN": run}))[0] == "allow"
    # ... and a person's commit in the lane, outside any run, spends $0.25 and 300 tokens
    (ws / "login.py").write_text("x\n")
    assert run_cli("commit", "-m", "by hand", "--agent-id", "h", "--cost-usd", "0.25", "--tokens-in", "100",
                   "--tokens-out", "200", "--auto-accept", cwd=ws).code == 0
    shown = {b["scope"]: b for b in run_cli("budget", "show", "--json", cwd=repo).json}
    assert shown["lane"]["spent"]["usd"] == 0.2575 and shown["lane"]["spent"]["tokens"] == 800
    assert shown["lane"]["level"] == "ok" and shown["lane"]["spent"]["runs"] == [run]
    assert shown["task"]["spent"]["tokens"] == 800 and shown["ticket"]["spent"]["usd"] == 0.2575
    assert shown["ticket"]["used"] == round(0.2575 / 2, 4)
    assert [b["scope"] for b in run_cli("budget", "show", "--task", task, "--json", cwd=repo).json] == ["task"]
    assert run_cli("budget", "clear", "--lane", "feature", cwd=repo).code == 0
    assert sorted(b["scope"] for b in run_cli("budget", "show", "--json", cwd=repo).json) == ["task", "ticket"]
    # the spend gate in front of spawn: today's runs cost $0.0075; past a daily limit of half a cent nothing
    # is spawned and nothing is made
    set_policy(repo, "[spend]\nusd_per_day = 0.005\n")
    lanes_before = run_cli("lane", "list", "--json", cwd=repo).json
    refused = run_cli("spawn", "--prompt", "More", "--json", cwd=repo)
    assert refused.code == 1 and refused.json["error"] == "spend_limit", refused.err
    assert run_cli("lane", "list", "--json", cwd=repo).json == lanes_before


def test_bad_budgets_are_refused_with_one_line(repo):
    lane(repo)
    for args in (["--lane", "nope", "--usd", "1"], ["--task", "beef", "--usd", "1"]):
        result = run_cli("budget", "set", *args, "--json", cwd=repo)
        assert result.code == 1 and "Traceback" not in result.err and result.json["error"], args
    # no limit, two subjects, none: the command's shape, a usage error (tests/test_usage_shapes.py)
    for args in (["--lane", "feature"], ["--lane", "feature", "--task", "ab", "--usd", "1"], ["--usd", "1"]):
        result = run_cli("budget", "set", *args, "--json", cwd=repo)
        assert result.code == 2 and "Traceback" not in result.err and result.json["error"] == "usage", args
    assert run_cli("budget", "set", "--lane", "feature", "--usd", "-1", cwd=repo).code == 2
    assert run_cli("budget", "clear", "--lane", "feature", cwd=repo).code == 1


def test_a_zero_budget_shows_as_used_up_not_as_a_billion_percent(repo):
    """`budget set --usd 0` (nothing may be spent) is reached at once; `budget show` printed its use as
    "100000000000%" and --json as 1e9, the cap of an infinite ratio. It is 100%, and exhausted."""
    assert run_cli("lane", "create", "frozen", cwd=repo).code == 0
    assert run_cli("budget", "set", "--lane", "frozen", "--usd", "0", cwd=repo).code == 0
    row = run_cli("budget", "show", "--json", cwd=repo).json[0]
    assert (row["used"], row["level"]) == (1.0, "exhausted")
    line = run_cli("budget", "show", cwd=repo).out.splitlines()[1]
    assert line.split()[-2:] == ["100%", "exhausted"], line


def test_the_hooks_warn_at_80_percent_and_block_writes_at_100_blocking_the_task(repo, tmp_path):
    ws = lane(repo)
    task = task_in_lane(repo, ws)
    assert run_cli("budget", "set", "--task", task, "--usd", "0.10", cwd=repo).code == 0
    run = run_cli("run", "start", "--agent", "a1", "--lane", "feature", "--task", task, "--phase", "execute",
                  cwd=ws).out.strip()
    env = {"GIT_LANES_RUN": run}
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(usage_line("m1", 5000, 3000) + "\n")  # $0.084: 84% of the budget
    first = hook("claude", "PreToolUse", write(ws, ws / "a.py", "w1") | {"transcript_path": str(transcript)}, env=env)
    assert decision(first)[0] == "allow"
    assert "80% of the budget of task" in json.loads(first.out)["hookSpecificOutput"]["additionalContext"]
    with transcript.open("a") as out:
        out.write(usage_line("m2", 2000) + "\n")  # $0.114 in all
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "b.py", "w2") |
                                    {"transcript_path": str(transcript)}, env=env))
    assert verdict == "deny" and "the budget of task" in reason and "is spent" in reason
    read = claude("PreToolUse", ws, tool_name="Read", tool_use_id="r1", transcript_path=str(transcript),
                  tool_input={"file_path": str(ws / "README.md")})
    assert decision(hook("claude", "PreToolUse", read, env=env))[0] == "allow"
    assert decision(hook("claude", "PreToolUse", bash(ws, "make", "b2") | {"transcript_path": str(transcript)},
                         env=env))[0] == "deny"
    shown = run_cli("task", "show", task, "--json", cwd=repo).json
    assert shown["status"] == "blocked" and "budget spent" in shown["blocked_reason"]
    posts = [p for p in run_cli("board", "read", "--json", cwd=repo).json["posts"] if p["kind"] == "question"]
    assert len(posts) == 1 and run[:8] in posts[0]["text"]
    assert show(repo, run)["alerts"] == {f"task:{task}": "exhausted"}
    # raising the budget lets the agent write again
    assert run_cli("budget", "set", "--task", task, "--usd", "1", cwd=repo).code == 0
    assert decision(hook("claude", "PreToolUse", write(ws, ws / "c.py", "w3") |
                         {"transcript_path": str(transcript)}, env=env))[0] == "allow"


def test_the_hooks_count_costs_recorded_outside_runs_as_budget_show_does(repo, tmp_path):
    """A person's `commit --cost-usd` in a lane counts toward the lane's and the lane's task's budgets in
    `budget show`; the hooks counted only runs, so an agent in a lane whose budget show called exhausted
    could still write."""
    ws = lane(repo)
    task = task_in_lane(repo, ws)
    assert run_cli("budget", "set", "--lane", "feature", "--usd", "1", cwd=repo).code == 0
    assert run_cli("budget", "set", "--task", task, "--tokens", "1000", cwd=repo).code == 0
    (ws / "one.py").write_text("1\n")
    assert run_cli("commit", "-m", "by hand", "--agent", "h", "--cost-usd", "0.85", "--tokens-in", "100",
                   "--auto-accept", cwd=ws).code == 0
    run = run_cli("run", "start", "--agent", "a1", "--lane", "feature", "--phase", "execute", cwd=ws).out.strip()
    env = {"GIT_LANES_RUN": run}
    first = hook("claude", "PreToolUse", write(ws, ws / "a.py", "w1"), env=env)
    assert decision(first)[0] == "allow"
    assert "80% of the budget of lane feature" in json.loads(first.out)["hookSpecificOutput"]["additionalContext"]
    (ws / "one.py").write_text("2\n")
    assert run_cli("commit", "-m", "by hand again", "--agent", "h", "--cost-usd", "0.25", "--auto-accept",
                   cwd=ws).code == 0
    assert {b["scope"]: b["level"] for b in run_cli("budget", "show", "--json", cwd=repo).json} == \
        {"lane": "exhausted", "task": "ok"}
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "b.py", "w2"), env=env))
    assert verdict == "deny" and "the budget of lane feature is spent" in reason, reason
    # a run of the task: its task's budget counts the task's lane's costs since the task was made
    tasked = run_cli("run", "start", "--agent", "a1", "--lane", "feature", "--task", task, "--phase", "execute",
                     cwd=ws).out.strip()
    assert run_cli("budget", "clear", "--lane", "feature", cwd=repo).code == 0
    assert decision(hook("claude", "PreToolUse", write(ws, ws / "c.py", "w3"), env={"GIT_LANES_RUN": tasked}))[0] \
        == "allow"
    (ws / "one.py").write_text("3\n")
    assert run_cli("commit", "-m", "tokens", "--agent", "h", "--tokens-out", "900", "--auto-accept", cwd=ws).code == 0
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "d.py", "w4"),
                                    env={"GIT_LANES_RUN": tasked}))
    assert verdict == "deny" and "the budget of task" in reason, reason


def test_a_damaged_copy_of_the_notes_costs_is_drawn_again_not_trusted(repo):
    """The hooks keep the costs they drew from the notes in .git/lanes-note-costs.json; a copy whose rows are
    not what they wrote (damaged, or written by another version) made every budget check fail, which denies."""
    ws = lane(repo)
    assert run_cli("budget", "set", "--lane", "feature", "--usd", "1", cwd=repo).code == 0
    (ws / "one.py").write_text("1\n")
    assert run_cli("commit", "-m", "by hand", "--agent", "h", "--cost-usd", "1.5", "--auto-accept", cwd=ws).code == 0
    notes = git("rev-parse", "refs/notes/lanes", cwd=repo).strip()
    (repo / ".git" / "lanes-note-costs.json").write_text(json.dumps({"notes": notes, "rows": {"x": ["feature"]}}))
    run = run_cli("run", "start", "--agent", "a1", "--lane", "feature", "--phase", "execute", cwd=ws).out.strip()
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "a.py", "w1"), env={"GIT_LANES_RUN": run}))
    assert verdict == "deny" and "the budget of lane feature is spent ($1.50 of $1.00)" in reason, reason


def test_a_session_its_hooks_started_in_a_tasks_lane_counts_toward_the_task_and_its_ticket(repo, tmp_path):
    """A run the hooks start by themselves (an agent CLI a person launched in the lane) has no task: its usage
    counted toward the lane only, so the task's and the ticket's budgets neither showed it nor stopped it."""
    ws = lane(repo)
    task = task_in_lane(repo, ws)
    ticket = run_cli("ticket", "open", "Login", "--json", cwd=repo).json["ticket"]
    assert run_cli("ticket", "link", ticket, task, cwd=repo).code == 0
    assert run_cli("budget", "set", "--task", task, "--usd", "0.10", cwd=repo).code == 0
    assert run_cli("budget", "set", "--ticket", ticket, "--usd", "0.50", cwd=repo).code == 0
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    read = claude("PreToolUse", ws, tool_name="Read", tool_use_id="r0", transcript_path=str(transcript),
                  tool_input={"file_path": str(ws / "README.md")})
    assert decision(hook("claude", "PreToolUse", read))[0] == "allow"
    (run,) = [r["id"] for r in run_cli("run", "list", "--json", cwd=repo).json]
    assert run_cli("run", "phase", run, "execute", cwd=repo).code == 0
    transcript.write_text(usage_line("m1", 5000, 3000) + "\n")  # $0.084: 84% of the task's budget
    first = hook("claude", "PreToolUse", write(ws, ws / "a.py", "w1") | {"transcript_path": str(transcript)})
    assert decision(first)[0] == "allow"
    assert "80% of the budget of task" in json.loads(first.out)["hookSpecificOutput"]["additionalContext"]
    shown = {b["scope"]: b for b in run_cli("budget", "show", "--json", cwd=repo).json}
    assert shown["task"]["spent"]["runs"] == [run] and shown["task"]["spent"]["usd"] == 0.084
    assert shown["ticket"]["spent"]["runs"] == [run] and shown["ticket"]["level"] == "ok"
    with transcript.open("a") as out:
        out.write(usage_line("m2", 2000) + "\n")  # $0.114 in all
    verdict, reason = decision(hook("claude", "PreToolUse", write(ws, ws / "b.py", "w2") |
                                    {"transcript_path": str(transcript)}))
    assert verdict == "deny" and "the budget of task" in reason and "is spent" in reason, reason
    assert run_cli("task", "show", task, "--json", cwd=repo).json["status"] == "blocked"


def test_a_spawned_agent_whose_budget_is_spent_is_blocked_then_stopped(repo, tmp_path):
    path = use_fake_agent(repo, tmp_path, {"default": [{"usage": {"input": 3000, "output": 5000}},
                                                       {"write": "a.py", "content": "a\n"},
                                                       {"usage": {"input": 0, "output": 5000}},
                                                       {"write": "b.py", "content": "b\n"}, {"hang": {}}]},
                          # The agent's next write must come within the grace the supervisor gives it once its
                          # budget is spent: 2 s was too short for a hook call on a machine loaded 9 times over.
                          stop_grace=8)
    task = run_cli("task", "create", "Spend", "--json", cwd=repo).json["task"]
    assert run_cli("budget", "set", "--task", task, "--usd", "0.10", cwd=repo).code == 0
    spawned = run_cli("spawn", task, "--json", cwd=repo)
    assert spawned.code == 0, spawned.err
    run = spawned.json["run"]
    wait_for(lambda: finished(repo, run), "the supervisor to stop the agent")
    denied = journal(path, run, "denied")
    assert [d["input"]["file_path"].rsplit("/", 1)[-1] for d in denied] == ["b.py"]
    assert "budget" in denied[0]["reason"]
    state = show(repo, run)
    assert state["stop"]["budget"] and "budget of task" in state["stop"]["reason"] and not state["process"]
    assert run_cli("task", "show", task, "--json", cwd=repo).json["status"] == "blocked"
    listed = [r for r in run_cli("ps", "--all", "--json", cwd=repo).json if r["run"] == run]
    assert [(b["scope"], b["key"], b["level"]) for b in listed[0]["budgets"]] == [("task", task, "exhausted")]
    assert "% task" in run_cli("ps", "--all", cwd=repo).out
    refused = run_cli("spawn", task, "--json", cwd=repo)
    assert refused.code == 1 and refused.json["error"] == "budget_exhausted"
