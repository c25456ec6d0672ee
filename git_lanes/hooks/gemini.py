"""Gemini CLI's hooks (google-gemini/gemini-cli docs/hooks): its own event names (BeforeTool, AfterTool,
BeforeAgent, AfterAgent, PreCompress), its own tool names (run_shell_command, write_file, replace…), no
`tool_use_id` (calls are paired by a digest of the call) and timeouts in milliseconds. Exit 0 with a JSON
object always (`{}` when there is nothing to say: non-JSON stdout is taken as an allow); a deny is
`{"decision": "deny", "reason": …}`, which the model receives as the tool's error."""

from __future__ import annotations

import json

from git_lanes.hooks import protocol
from git_lanes.hooks.protocol import Answer, Malformed
from git_lanes.model.calls import HookEvent, ToolCall, Verdict

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

CLI = "gemini"
EVENTS = {"SessionStart": "session_start", "BeforeAgent": "prompt", "BeforeTool": "pre_tool",
          "AfterTool": "post_tool", "PreCompress": "pre_compact", "AfterAgent": "stop", "SessionEnd": "session_end"}
# Claude Code's names, accepted too, for people who wire both CLIs from one list.
ALIASES = {"PreToolUse": "BeforeTool", "PostToolUse": "AfterTool", "UserPromptSubmit": "BeforeAgent",
           "Stop": "AfterAgent", "PreCompact": "PreCompress"}
PRE_TOOL = "BeforeTool"
WRITE_TOOLS = {"write_file": "Write", "replace": "Edit"}
READ_TOOLS = {"read_file": "Read", "read_many_files": "Read", "glob": "Glob", "grep_search": "Grep",
              "search_file_content": "Grep", "list_directory": "Glob", "web_fetch": "WebFetch",
              "google_web_search": "WebSearch", "get_internal_docs": "Read"}


def tool_call(payload: dict[str, Any]) -> ToolCall:
    name = protocol.text(payload, "tool_name")
    if name is None:
        raise Malformed("the hook payload has no tool_name")
    data = protocol.tool_input(payload)
    call_id = protocol.derived_id(name, data)
    if name == "run_shell_command":
        command = protocol.shell_text(data.get("command"), name)
        directory = data.get("dir_path") or data.get("directory")
        return ToolCall(name, "Bash", "exec", call_id, command, command=command,
                        cwd=directory if isinstance(directory, str) and directory else None)
    if name in WRITE_TOOLS:
        path = protocol.require_text(data, "file_path", name)
        return ToolCall(name, WRITE_TOOLS[name], "write", call_id, path, paths=(path,))
    if name == "write_todos":
        return ToolCall(name, name, "plan", call_id, f"{len(data.get('todos') or [])} todos",
                        plan=protocol.plan_steps(data.get("todos"), "description"))
    if name in READ_TOOLS:
        return ToolCall(name, READ_TOOLS[name], "read", call_id, protocol.summary_of(data))
    return protocol.unknown_tool(name, data, call_id)


def _failed(payload: dict[str, Any]) -> str | None:
    response = payload.get("tool_response")
    error = response.get("error") if isinstance(response, dict) else None
    return str(error.get("message", error) if isinstance(error, dict) else error) if error else None


def to_event(name: str, payload: dict[str, Any], env: dict[str, str]) -> HookEvent:
    name = ALIASES.get(name, name)
    canonical = EVENTS.get(name, "other")
    call = tool_call(payload) if canonical in ("pre_tool", "post_tool") else None
    error = _failed(payload) if canonical == "post_tool" else None
    if error:
        canonical = "tool_failed"
    source = {"session_start": "source", "session_end": "reason", "pre_compact": "trigger"}.get(canonical)
    return protocol.event(CLI, canonical, payload, env, call, error=error,
                          source=protocol.text(payload, source) if source else None,
                          prompt=protocol.text(payload, "prompt"))


def answer(name: str, verdict: Verdict) -> Answer:
    name = ALIASES.get(name, name)
    out: dict[str, Any] = {}
    if not verdict.allow:
        out = {"decision": "deny", "reason": verdict.reason}
    if verdict.context:
        out["hookSpecificOutput"] = {"hookEventName": name, "additionalContext": verdict.context}
        if name == PRE_TOOL and verdict.allow:
            out["systemMessage"] = verdict.context
    if verdict.notice:
        out["systemMessage"] = verdict.notice
    if verdict.proceed:
        # AfterAgent: a deny rejects the response and retries the turn with the reason as its prompt.
        out["decision"], out["reason"] = "deny", verdict.proceed
    return Answer(json.dumps(out))


def deny(name: str, reason: str) -> Answer:
    return answer(name, Verdict(False, reason))


def notice(name: str, message: str) -> Answer:
    return Answer(json.dumps({"systemMessage": message}))
