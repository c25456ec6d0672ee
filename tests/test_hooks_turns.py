"""A turn's end becomes a transition; cost comes from the transcript; a resumed session is briefed from
durable state, naming the call in flight when the last one died and the file it left changed."""

from __future__ import annotations

import json

from conftest import git, run_cli
from hook_helpers import bash, claude, decision, hook, lane, run_id, set_policy, write


def assistant_line(message_id: str, request: str, output_tokens: int, model: str = "claude-sonnet-5") -> str:
    return json.dumps({"type": "assistant", "requestId": request, "uuid": f"{message_id}-{request}",
                       "message": {"id": message_id, "type": "message", "role": "assistant", "model": model,
                                   "content": [{"type": "text", "text": "…"}],
                                   "usage": {"input_tokens": 3, "output_tokens": output_tokens,
                                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100}}})


def test_a_killed_session_is_briefed_with_its_in_flight_call_and_the_file_it_changed(repo):
    ws = lane(repo)
    started = run_cli("run", "start", "--agent", "coder-1", "--goal", "Add a greeting", "--phase", "execute",
                      cwd=ws)
    env = {"GIT_LANES_RUN": started.out.strip()}
    assert hook("claude", "SessionStart", claude("SessionStart", ws, source="startup"), env=env).code == 0
    todos = claude("PreToolUse", ws, tool_name="TodoWrite", tool_use_id="toolu_plan",
                   tool_input={"todos": [{"content": "write greet.py", "status": "in_progress",
                                          "activeForm": "Writing"},
                                         {"content": "test it", "status": "pending", "activeForm": "Testing"}]})
    assert decision(hook("claude", "PreToolUse", todos, env=env))[0] == "allow"
    target = ws / "src" / "greet.py"
    assert decision(hook("claude", "PreToolUse", write(ws, target, "toolu_01KILLED"), env=env))[0] == "allow"
    target.write_text("print('hello, world')\n")  # the write landed; the session died before PostToolUse
    resumed = hook("claude", "SessionStart", claude("SessionStart", ws, "sess-2", source="resume"), env=env)
    assert resumed.code == 0, resumed.err
    text = json.loads(resumed.out)["hookSpecificOutput"]["additionalContext"]
    assert "toolu_01KILLED" in text and str(target) in text
    assert "src/greet.py" in text and "+print('hello, world')" in text
    assert "Goal: Add a greeting" in text and "[in_progress] write greet.py" in text
    briefing = run_cli("run", "resume", started.out.strip(), "--json", cwd=ws).json
    assert "toolu_01KILLED" in [f["id"] for f in briefing["in_flight"]]
    assert [f["path"] for f in briefing["disk"]["files"]] == ["src/greet.py"]


def test_a_briefing_says_when_the_lane_or_its_workspace_is_gone_rather_than_that_nothing_changed(repo):
    """A run whose lane was deleted, or whose workspace was removed, while its session was down was briefed
    "On disk: the workspace matches its lane head": the model was told its work was safe and unchanged when
    there was no workspace at all to look in."""
    import shutil

    ws, other = lane(repo), lane(repo, "other")
    briefings = {}
    for name, where in (("feature", ws), ("other", other)):
        env = {"GIT_LANES_RUN": run_cli("run", "start", "--agent", f"coder-{name}", cwd=where).out.strip()}
        assert hook("claude", "SessionStart", claude("SessionStart", where, source="startup"), env=env).code == 0
        assert decision(hook("claude", "PreToolUse", bash(where, "ls", "toolu_ls"), env=env))[0] == "allow"
        if name == "feature":
            assert run_cli("lane", "delete", "feature", "--force", cwd=repo).code == 0
        else:
            shutil.rmtree(other)
        resumed = hook("claude", "SessionStart", claude("SessionStart", repo, "sess-2", source="resume"), env=env)
        assert resumed.code == 0, resumed.err
        briefings[name] = json.loads(resumed.out)["hookSpecificOutput"]["additionalContext"]
    assert not any("matches its lane head" in text for text in briefings.values()), briefings
    assert "On disk: lane feature no longer exists" in briefings["feature"], briefings["feature"]
    assert "On disk: lane other has no workspace" in briefings["other"], briefings["other"]


def test_a_session_resumed_on_an_ended_run_is_told_the_run_ended_not_to_move_on(repo):
    """Every tool call of an ended run is denied; its briefing told the resumed session to carry on (`Move on
    with git lanes run phase`, the calls in flight to reconcile), so the model set off into a wall."""
    ws = lane(repo)
    run = run_cli("run", "start", "--agent", "coder-1", "--goal", "Add a greeting", "--phase", "execute",
                  cwd=ws).out.strip()
    env = {"GIT_LANES_RUN": run}
    assert decision(hook("claude", "PreToolUse", write(ws, ws / "a.py", "toolu_01LEFT"), env=env))[0] == "allow"
    assert run_cli("run", "end", run, cwd=ws).code == 0
    resumed = hook("claude", "SessionStart", claude("SessionStart", ws, "sess-2", source="resume"), env=env)
    text = json.loads(resumed.out)["hookSpecificOutput"]["additionalContext"]
    assert "has ended" in text and "Move on" not in text, text
    assert "Goal: Add a greeting" in text and "toolu_01LEFT" in text  # still what the person needs to see
    assert "has ended" in run_cli("run", "resume", run, cwd=ws).out


def test_the_briefing_shows_the_trunk_moving_and_colliding_paths(repo):
    ws = lane(repo)
    run = run_cli("run", "start", "--agent", "a1", "--phase", "execute", cwd=ws).out.strip()
    (ws / "src" / "app.py").write_text("print('lane')\n")
    assert run_cli("commit", "-m", "lane edit", "--auto-accept", "--agent-id", "a1", cwd=ws).code == 0
    (repo / "src" / "app.py").write_text("print('trunk')\n")
    assert run_cli("commit", "-m", "trunk edit", "--auto-accept", "--agent-id", "h", cwd=repo).code == 0
    text = run_cli("run", "resume", run, cwd=ws).out
    assert "The trunk moved" in text and "src/app.py" in text


def test_cost_comes_from_the_transcript_once_per_response_and_the_spend_gate_holds(repo):
    set_policy(repo, "[spend]\nusd_per_run = 0.01\n[phases]\nread_only = []\n"
                     "[prices]\nsonnet = { input = 3.0, output = 15.0, cache_read = 0.0, cache_write = 0.0 }\n")
    ws = lane(repo)
    transcript = ws.parent.parent / "transcript.jsonl"
    # One response written as three lines (one per content block) repeats its usage: it counts once.
    transcript.write_text("\n".join([json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}),
                                     assistant_line("msg_1", "req_1", 400), assistant_line("msg_1", "req_1", 400),
                                     assistant_line("msg_1", "req_1", 400)]) + "\n")
    payload = bash(ws, "ls", "t1") | {"transcript_path": str(transcript)}
    assert decision(hook("claude", "PreToolUse", payload))[0] == "allow"
    shown = run_cli("run", "show", run_id(ws), "--json", cwd=ws).json
    assert shown["tokens"]["output"] == 400 and abs(shown["cost_usd"] - 0.006009) < 1e-6
    with transcript.open("a") as out:
        out.write(assistant_line("msg_2", "req_2", 400) + "\n")
    verdict, reason = decision(hook("claude", "PreToolUse", bash(ws, "ls", "t2") | {"transcript_path": str(transcript)}))
    assert verdict == "deny" and "spend limit" in reason and "usd_per_run" in reason
    assert "this run cost $0.0120 of $0.01 " in reason, reason  # not "$0.01 of $0.01": cents hid the overshoot
    read = claude("PreToolUse", ws, tool_name="Read", tool_use_id="t3", transcript_path=str(transcript),
                  tool_input={"file_path": str(ws / "README.md")})
    assert decision(hook("claude", "PreToolUse", read))[0] == "allow"
    # `git lanes run …` passes free so the model can move on, but starting an agent is no way to move on: past
    # the limit, `run resume --spawn` (which starts an agent CLI) is denied like any command; the briefing is not
    run = run_id(ws)
    spawn = bash(ws, f"git lanes run resume {run[:8]} --spawn", "t4") | {"transcript_path": str(transcript)}
    verdict, reason = decision(hook("claude", "PreToolUse", spawn))
    assert verdict == "deny" and "spend limit" in reason
    brief = bash(ws, f"git lanes run resume {run[:8]}", "t5") | {"transcript_path": str(transcript)}
    assert decision(hook("claude", "PreToolUse", brief))[0] == "allow"


def test_a_transcript_line_too_deep_for_json_still_counts_and_stops_nothing(repo):
    """A tool input nested thousands deep puts a line in the transcript the json module cannot read: its
    response still counts, and the session's later calls are judged, not denied for the reader's error."""
    from hook_helpers import hook_in_process

    set_policy(repo, "[phases]\nread_only = []\n")
    ws = lane(repo)
    transcript = ws.parent.parent / "transcript.jsonl"
    deep = json.loads(assistant_line("msg_1", "req_1", 400))
    deep["message"]["content"] = [{"type": "tool_use", "input": {"x": "__DEEP__"}}]
    transcript.write_text(json.dumps(deep).replace('"__DEEP__"', "[" * 5000 + "]" * 5000) + "\n")
    for number in range(2):
        payload = bash(ws, "ls", f"t{number}") | {"transcript_path": str(transcript)}
        assert decision(hook_in_process("claude", "PreToolUse", payload))[0] == "allow"
    assert run_cli("run", "show", run_id(ws), "--json", cwd=ws).json["tokens"]["output"] == 400


def test_a_turn_becomes_a_proposed_transition_with_the_prompt_and_cost(repo):
    ws = lane(repo)
    transcript = ws.parent.parent / "t.jsonl"
    transcript.write_text("")
    base = {"transcript_path": str(transcript)}
    hook("claude", "UserPromptSubmit", claude("UserPromptSubmit", ws, prompt="Add a greeting module") | base)
    (ws / "greet.py").write_text("print('hi')\n")
    transcript.write_text(assistant_line("msg_9", "req_9", 1000) + "\n")
    stop = claude("Stop", ws, stop_hook_active=False, last_assistant_message="Done.", background_tasks=[],
                  session_crons=[]) | base
    result = hook("claude", "Stop", stop)
    assert result.code == 0, result.err
    assert "transition" in json.loads(result.out)["systemMessage"]
    history = run_cli("history", "--lane", "feature", "--json", cwd=repo).json["transitions"]
    turn = history[0]
    assert turn["status"] == "proposed" and turn["intent"]["prompt"] == "Add a greeting module"
    assert turn["cost"]["tokens_out"] == 1000 and turn["cost"]["api_calls"] == 1 and turn["cost"]["cost_usd"] > 0
    shown = run_cli("run", "show", run_id(ws), "--json", cwd=ws).json
    assert shown["transitions"] == [turn["id"]]
    again = hook("claude", "Stop", stop)  # nothing changed since: no new transition
    assert again.code == 0
    assert len(run_cli("history", "--lane", "feature", "--json", cwd=repo).json["transitions"]) == len(history)


def test_huge_usage_figures_are_kept_at_the_bounds_and_the_turn_is_still_recorded(repo):
    """A transcript's token counts and a policy's prices are nobody's typed input: a count no float holds
    (10**400) used to fail every later call of the session with an OverflowError, and a turn over 10^12
    tokens lost its transition to the cost's bound. Each figure is kept at its bound (tokens 10^12, US$10^9)."""
    set_policy(repo, "[spend]\nusd_per_run = false\nusd_per_day = false\n[phases]\nread_only = []\n"
                     "[prices]\nsonnet = { input = 1e300, output = 1e300, cache_read = 0.0, cache_write = 0.0 }\n")
    ws = lane(repo)
    transcript = ws.parent.parent / "t.jsonl"
    transcript.write_text("")
    base = {"transcript_path": str(transcript)}
    assert hook("claude", "UserPromptSubmit", claude("UserPromptSubmit", ws, prompt="Go big") | base).code == 0
    transcript.write_text(assistant_line("msg_1", "req_1", 10**400) + "\n"
                          + assistant_line("msg_2", "req_2", 10**13) + "\n")
    (ws / "big.py").write_text("x = 1\n")
    payload = bash(ws, "ls", "t1") | base
    assert decision(hook("claude", "PreToolUse", payload)) == ("allow", None)
    result = hook("claude", "Stop", claude("Stop", ws, stop_hook_active=False) | base)
    assert result.code == 0 and "transition" in json.loads(result.out)["systemMessage"], result.out
    cost = run_cli("history", "--lane", "feature", "--json", cwd=repo).json["transitions"][0]["cost"]
    assert (cost["tokens_out"], cost["cost_usd"], cost["api_calls"]) == (10**12, 10**9, 2)
    shown = run_cli("run", "show", run_id(ws), "--json", cwd=ws).json
    assert shown["tokens"]["output"] == 2 * 10**12 and shown["cost_usd"] == 2 * 10**9


def test_stop_snapshot_can_be_switched_off(repo):
    set_policy(repo, '[stop]\nsnapshot = "off"\n')
    ws = lane(repo)
    (ws / "x.py").write_text("x = 1\n")
    assert hook("claude", "Stop", claude("Stop", ws, stop_hook_active=False)).code == 0
    assert git("status", "--porcelain", cwd=ws).strip() == "?? x.py"
    events = run_cli("run", "events", run_id(ws), "--json", cwd=ws).json
    assert events[-1]["type"] == "turn_end" and events[-1]["snapshot"] == "off"


def test_the_daily_limit_counts_every_run(repo):
    set_policy(repo, "[spend]\nusd_per_run = false\nusd_per_day = 0.01\n[phases]\nread_only = []\n"
                     "[prices]\nsonnet = { input = 0.0, output = 15.0, cache_read = 0.0, cache_write = 0.0 }\n")
    ws = lane(repo)
    for session, message in (("first", "msg_a"), ("second", "msg_b")):
        transcript = ws.parent.parent / f"{session}.jsonl"
        transcript.write_text(assistant_line(message, "req", 400) + "\n")  # $0.006 each
        payload = bash(ws, "ls", f"t-{session}", session=session) | {"transcript_path": str(transcript)}
        result = decision(hook("claude", "PreToolUse", payload))
    assert result[0] == "deny" and "daily spend limit" in result[1]
    stats = run_cli("run", "stats", "--json", cwd=repo).json
    assert stats["totals"]["cost_usd"] == 0.012 and stats["totals"]["blocked"] == 1


def test_a_session_id_that_is_no_agent_id_still_records_its_turns(repo):
    """A run a hook starts is its session's, and its agent defaulted to the session id, whatever it held: a
    session id that is no agent id (a space, a slash, too long) made a run whose every turn's snapshot failed
    ("invalid agent id"), so the work done in it never became a transition. Such a run's agent is named as
    spawn names one (`<cli>-<run>`)."""
    ws = lane(repo)
    session = "chat 7/" + "x" * 80
    hook("claude", "UserPromptSubmit", claude("UserPromptSubmit", ws, session, prompt="Add a greeting module"))
    (ws / "greet.py").write_text("print('hi')\n")
    result = hook("claude", "Stop", claude("Stop", ws, session, stop_hook_active=False))
    assert result.code == 0 and "failed" not in result.out, result.out
    run = run_id(ws)
    turn = run_cli("history", "--lane", "feature", "--json", cwd=repo).json["transitions"][0]
    assert turn["intent"]["prompt"] == "Add a greeting module"
    assert turn["intent"]["agent_id"] == f"claude-{run[:8]}"
    assert run_cli("run", "show", run, "--json", cwd=ws).json["agent"] == f"claude-{run[:8]}"


def test_a_prompt_holding_terminal_colours_still_becomes_the_turn_s_intent(repo):
    """A prompt is whatever the person pasted: test output with its colours (`\x1b[31m`), a bell. Taken as the
    intent as it was, the turn's snapshot failed ("the prompt contains a control character"), so the turn's
    work never became a transition. The control characters are written as their escapes instead."""
    ws = lane(repo)
    prompt = "Fix this:\n\x1b[31mFAILED\x1b[0m tests/test_x.py\x07"
    hook("claude", "UserPromptSubmit", claude("UserPromptSubmit", ws, prompt=prompt))
    (ws / "fix.py").write_text("x = 1\n")
    result = hook("claude", "Stop", claude("Stop", ws, stop_hook_active=False))
    assert result.code == 0 and "failed" not in result.out, result.out
    turn = run_cli("history", "--lane", "feature", "--json", cwd=repo).json["transitions"][0]
    assert turn["intent"]["prompt"] == "Fix this: ⏎ \\x1b[31mFAILED\\x1b[0m tests/test_x.py\\x07"
    assert git("show", "-s", "--format=%s", turn["to"], cwd=repo).strip() == "Fix this: ⏎ \\x1b[31mFAILED\\x1b[0m tests/test_x.py\\x07"


def test_an_agent_id_from_the_environment_that_is_no_agent_id_denies_before_anything_runs(repo):
    """GIT_LANES_AGENT="Jane Doe" passed the hooks (their run started with it) while every command refuses it:
    the tools ran and each turn's snapshot failed. The wall holds instead, saying why."""
    ws = lane(repo)
    read = claude("PreToolUse", ws, tool_name="Read", tool_input={"file_path": str(ws / "README.md")},
                  tool_use_id="toolu_read")
    verdict, reason = decision(hook("claude", "PreToolUse", read, env={"GIT_LANES_AGENT": "Jane Doe"}))
    assert verdict == "deny" and "invalid agent id 'Jane Doe'" in reason
    assert run_cli("run", "list", "--json", cwd=ws).json == []


def test_a_turn_costs_what_was_spent_after_its_prompt(repo):
    """The transcript is written as the session goes and may lag: a response of the turn before lands after
    that turn's Stop. Read at the next prompt, it is the run's spending, not the next turn's, whose transition
    costs only what was spent after its prompt."""
    ws = lane(repo)
    transcript = ws.parent.parent / "t.jsonl"
    transcript.write_text("")
    base = {"transcript_path": str(transcript)}
    stop = claude("Stop", ws, stop_hook_active=False, last_assistant_message="Done.") | base
    hook("claude", "UserPromptSubmit", claude("UserPromptSubmit", ws, prompt="Plan the module") | base)
    assert hook("claude", "Stop", stop).code == 0  # nothing written yet: no usage, no transition
    transcript.write_text(assistant_line("msg_1", "req_1", 700) + "\n")  # turn 1's response, late
    hook("claude", "UserPromptSubmit", claude("UserPromptSubmit", ws, prompt="Add a greeting module") | base)
    (ws / "greet.py").write_text("print('hi')\n")
    with transcript.open("a") as out:
        out.write(assistant_line("msg_2", "req_2", 50) + "\n")
    assert hook("claude", "Stop", stop).code == 0
    [turn] = run_cli("history", "--lane", "feature", "--json", cwd=repo).json["transitions"]
    assert turn["intent"]["prompt"] == "Add a greeting module"
    assert (turn["cost"]["tokens_out"], turn["cost"]["api_calls"]) == (50, 1), turn["cost"]
    shown = run_cli("run", "show", run_id(ws), "--json", cwd=ws).json
    assert shown["tokens"]["output"] == 750  # the run still counts both


def test_the_briefing_names_a_change_on_disk_that_another_agent_claims(repo):
    """A run driven by hooks claims nothing by itself, yet what it left changed on disk can sit in another
    agent's claim or dirty set: the resumed session is told, with whose, before it carries on."""
    ws = lane(repo)
    run = run_cli("run", "start", "--agent", "coder-1", "--phase", "execute", cwd=ws).out.strip()
    env = {"GIT_LANES_RUN": run}
    assert decision(hook("claude", "PreToolUse", write(ws, ws / "src" / "api.py", "toolu_api"), env=env))[0] == "allow"
    (ws / "src").mkdir(exist_ok=True)
    (ws / "src" / "api.py").write_text("routes = []\n")
    assert run_cli("claim", "add", "src/*.py", "--agent", "coder-2", cwd=repo).code == 0
    resumed = hook("claude", "SessionStart", claude("SessionStart", ws, "sess-2", source="resume"), env=env)
    text = json.loads(resumed.out)["hookSpecificOutput"]["additionalContext"]
    assert "Claim overlap: your change to src/api.py is in coder-2's claim src/*.py" in text, text
    briefing = run_cli("run", "resume", run, "--json", cwd=ws).json
    assert briefing["overlaps"] == [{"agent": "coder-2", "file": "src/api.py", "claim": "src/*.py"}]
