"""Codex CLI and Gemini CLI hooks, each in its own documented format, in real processes."""

from __future__ import annotations

import json

import pytest
from conftest import git, run_cli
from hook_helpers import claude, decision, hook, lane, run_id


@pytest.fixture
def ws(repo):
    return lane(repo)


def codex(event: str, cwd, **fields) -> dict:
    return {"session_id": "thread-1", "turn_id": "turn-1", "transcript_path": None, "cwd": str(cwd),
            "hook_event_name": event, "model": "gpt-5-codex", "permission_mode": "default", **fields}


def gemini(event: str, cwd, **fields) -> dict:
    return {"session_id": "gem-1", "transcript_path": str(cwd / "session.json"), "cwd": str(cwd),
            "hook_event_name": event, "timestamp": "2026-01-01T10:30:00Z", **fields}


PATCH = """*** Begin Patch
*** Add File: src/new.py
+print('hi')
*** Update File: README.md
@@
-# project
+# project!
*** End Patch"""


def test_codex_denies_in_claudes_format_and_never_sends_a_bare_allow(ws):
    denied = hook("codex", "PreToolUse", codex("PreToolUse", ws, tool_name="Bash", tool_use_id="call_1",
                                               tool_input={"command": "git status; curl http://x"}))
    assert decision(denied)[0] == "deny"
    allowed = hook("codex", "PreToolUse", codex("PreToolUse", ws, tool_name="Bash", tool_use_id="call_2",
                                                tool_input={"command": "git status"}))
    assert allowed.code == 0 and allowed.out == ""


def test_codex_apply_patch_paths_go_through_the_write_gate(repo, ws):
    run_cli("run", "start", "--agent", "cx", "--phase", "execute", cwd=ws)
    run = run_id(ws)
    env = {"GIT_LANES_RUN": run}
    ok = hook("codex", "PreToolUse", codex("PreToolUse", ws, tool_name="apply_patch", tool_use_id="call_p",
                                           tool_input={"command": PATCH}), env=env)
    assert decision(ok)[0] == "allow"
    escaping = PATCH.replace("src/new.py", "../../../README.md")
    verdict, reason = decision(hook("codex", "PreToolUse", codex("PreToolUse", ws, tool_name="apply_patch",
                                                                  tool_use_id="call_q",
                                                                  tool_input={"command": escaping}), env=env))
    assert verdict == "deny" and "main worktree" in reason
    weight = run_cli("run", "show", run, "--json", cwd=ws).json["budget"]["execute"]["spent"]
    assert weight == 1.5  # apply_patch weighs what Edit weighs


def test_codex_stop_answers_json_or_nothing(ws):
    hook("codex", "UserPromptSubmit", codex("UserPromptSubmit", ws, prompt="fix the bug"))
    result = hook("codex", "Stop", codex("Stop", ws, stop_hook_active=False, last_assistant_message="done"))
    assert result.code == 0 and (result.out == "" or isinstance(json.loads(result.out), dict))


def test_gemini_before_tool_deny_and_allow(ws):
    denied = hook("gemini", "BeforeTool", gemini("BeforeTool", ws, tool_name="run_shell_command",
                                                 tool_input={"command": "cd x && rm -rf y"}))
    assert denied.code == 0 and json.loads(denied.out)["decision"] == "deny"
    assert "rm -rf y" in json.loads(denied.out)["reason"]
    allowed = hook("gemini", "BeforeTool", gemini("BeforeTool", ws, tool_name="read_file",
                                                  tool_input={"file_path": str(ws / "README.md")}))
    assert allowed.code == 0 and json.loads(allowed.out).get("decision") != "deny"
    bad = hook("gemini", "BeforeTool", "{oops")
    assert bad.code == 0 and json.loads(bad.out)["decision"] == "deny"


def test_gemini_pairs_calls_without_a_tool_use_id(ws):
    call = {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}
    assert hook("gemini", "BeforeTool", gemini("BeforeTool", ws, **call)).code == 0
    after = hook("gemini", "AfterTool", gemini("AfterTool", ws, **call,
                                               tool_response={"llmContent": "ok", "returnDisplay": "ok"}))
    assert after.code == 0 and json.loads(after.out) == {}
    shown = run_cli("run", "show", run_id(ws), "--json", cwd=ws).json
    assert shown["calls"] == 1 and shown["completed"] == 1 and shown["in_flight"] == []


def test_gemini_write_file_in_plan_phase_is_denied(ws):
    verdict = hook("gemini", "BeforeTool", gemini("BeforeTool", ws, tool_name="write_file",
                                                  tool_input={"file_path": str(ws / "a.py"), "content": "x"}))
    assert json.loads(verdict.out)["decision"] == "deny" and "read-only" in json.loads(verdict.out)["reason"]


def test_an_unknown_cli_or_event_fails_closed_or_stays_silent(ws):
    unknown_cli = hook("cursor", "PreToolUse", "{}")
    assert unknown_cli.code == 2 and "usage" in unknown_cli.err
    silent = hook("claude", "Notification", {"session_id": "s", "cwd": str(ws), "message": "hi"})
    assert silent.code == 0 and silent.out == ""


@pytest.mark.parametrize("response, failed", [
    ("Exit code: 2\nWall time: 0.1 seconds\nOutput:\nls: cannot access 'x'\n", True),
    ({"exit_code": 1, "output": "boom"}, True),
    ("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok\n", False),
    ("plain output, exit code unknown", False),
])
def test_codex_post_tool_use_of_a_failing_command_counts_as_failed(ws, response, failed):
    """Codex has no PostToolUseFailure: PostToolUse follows a failing command too, and only its response tells."""
    call = {"tool_name": "Bash", "tool_use_id": "call_9", "tool_input": {"command": "ls x"}}
    assert hook("codex", "PreToolUse", codex("PreToolUse", ws, **call)).code == 0
    after = hook("codex", "PostToolUse", codex("PostToolUse", ws, **call, tool_response=response))
    assert after.code == 0 and after.out == ""
    shown = run_cli("run", "show", run_id(ws), "--json", cwd=ws).json
    assert (shown["failed"], shown["completed"]) == ((1, 0) if failed else (0, 1)) and shown["in_flight"] == []


@pytest.mark.parametrize("cli, prompt_event, stop_event, payload", [
    ("claude", "UserPromptSubmit", "Stop", claude),
    ("codex", "UserPromptSubmit", "Stop", codex),
    ("gemini", "BeforeAgent", "AfterAgent", gemini),
])
def test_the_end_of_a_turn_of_an_ended_run_records_nothing_and_lets_the_cli_stop(ws, cli, prompt_event,
                                                                                   stop_event, payload):
    """`git lanes run end` closes the run, yet the session may still end a turn: its Stop used to snapshot the
    workspace into a new transition and append the turn to the ended run's log. It records nothing now (not
    even the usage), and its answer never blocks the stop (a block would send the model back into tools that
    are all denied)."""
    assert hook(cli, prompt_event, payload(prompt_event, ws, prompt="Add a greeting")).code == 0
    run = run_id(ws)
    assert run_cli("run", "end", run, cwd=ws).code == 0
    ended = git("rev-parse", f"refs/lanes/runs/{run}", cwd=ws).strip()
    (ws / "greet.py").write_text("print('hi')\n")
    result = hook(cli, stop_event, payload(stop_event, ws, stop_hook_active=False, last_assistant_message="Done."))
    assert result.code == 0, result.err
    answer = json.loads(result.out) if result.out.strip() else {}
    assert "decision" not in answer and answer.get("continue", True), answer
    assert git("rev-parse", f"refs/lanes/runs/{run}", cwd=ws).strip() == ended  # (no transcript: no usage either)
    assert run_cli("history", "--lane", "feature", "--json", cwd=ws).json["transitions"] == []
    assert git("status", "--porcelain", cwd=ws).strip() == "?? greet.py"  # the work stays on disk, unrecorded
