"""`git lanes tell` through each agent CLI's hook protocol: a queued message rides on the next tool call as
context, or blocks the next Stop (AfterAgent for Gemini) so the model goes on with it; each is delivered once."""

from __future__ import annotations

import json

from conftest import run_cli
from hook_helpers import claude, hook, lane, write


def started_run(ws) -> str:
    result = run_cli("run", "start", "--agent", "a1", "--phase", "execute", cwd=ws)
    assert result.code == 0, result.err
    return result.out.strip()


def test_a_told_message_rides_on_the_next_tool_call_once(repo):
    ws = lane(repo)
    run = started_run(ws)
    told = run_cli("tell", run[:6], "Prefer the helper in util.py", "--from", "alice", "--json", cwd=repo)
    assert told.code == 0 and told.json == {"run": run, "message": told.json["message"], "queued": 1, "live": False}
    env = {"GIT_LANES_RUN": run}
    first = json.loads(hook("claude", "PreToolUse", write(ws, ws / "a.py", "w1"), env=env).out)["hookSpecificOutput"]
    assert first["additionalContext"] == "Message from alice (git lanes tell): Prefer the helper in util.py"
    assert "permissionDecision" not in first
    assert hook("claude", "PreToolUse", write(ws, ws / "b.py", "w2"), env=env).out.strip() == ""
    events = run_cli("run", "events", run, "--json", cwd=repo).json
    delivered = [e for e in events if e["type"] == "message_delivered"]
    assert len(delivered) == 1 and delivered[0]["via"] == "pre_tool"
    assert run_cli("run", "show", run, "--json", cwd=repo).json["inbox"] == []


def test_a_told_message_blocks_the_stop_in_each_cli_protocol(repo):
    ws = lane(repo)
    run = started_run(ws)
    env = {"GIT_LANES_RUN": run}
    stops = {"claude": ("Stop", claude("Stop", ws, stop_hook_active=False)),
             "codex": ("Stop", claude("Stop", ws, stop_hook_active=False) | {"turn_id": "t1", "model": "gpt-5"}),
             "gemini": ("AfterAgent", {"session_id": "g1", "cwd": str(ws), "hook_event_name": "AfterAgent",
                                       "prompt": "hi", "prompt_response": "done", "stop_hook_active": False})}
    answers = {}
    for cli, (event, payload) in stops.items():
        assert run_cli("tell", run, f"one more thing for {cli}", cwd=repo).code == 0
        result = hook(cli, event, payload, env=env)
        assert result.code == 0, result.err
        answers[cli] = json.loads(result.out)
    assert answers["claude"] == {"decision": "block", "reason": "Message from Test (git lanes tell): one more thing "
                                                                "for claude"}
    assert answers["codex"]["decision"] == "block" and "for codex" in answers["codex"]["reason"]
    assert answers["gemini"]["decision"] == "deny" and "for gemini" in answers["gemini"]["reason"]
    # nothing queued: the turn ends as before
    again = hook("claude", "Stop", claude("Stop", ws, stop_hook_active=True), env=env)
    assert "decision" not in (json.loads(again.out) if again.out.strip() else {})


def test_tell_refuses_an_ended_run_and_an_empty_message(repo):
    ws = lane(repo)
    run = started_run(ws)
    for message, said in [("  ", "the message must not be empty"),
                          ("a\x1bb", "the message contains a control character"),
                          ("x" * 17000, "the message is 17000 bytes; the limit is 16384")]:
        refused = run_cli("tell", run, message, "--json", cwd=repo)
        # it said "the post's text", naming what `board post` takes: tell sends a message to a run
        assert refused.code == 1 and said in refused.json["message"] and "post" not in refused.out, refused.out
    assert run_cli("run", "end", run, cwd=repo).code == 0
    ended = run_cli("tell", run, "hello", "--json", cwd=repo)
    assert ended.code == 3 and ended.json["error"] == "run_ended"
    assert run_cli("tell", "ffff", "hello", cwd=repo).code == 1
