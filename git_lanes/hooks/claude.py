"""Claude Code's hook protocol (code.claude.com/docs/en/hooks): JSON on stdin; exit 0 with a JSON object on
stdout (or nothing). A deny is `hookSpecificOutput.permissionDecision: "deny"` with its reason, which the
model sees; context for the model goes in `additionalContext`. Never exit 1: Claude Code treats it as a
non-blocking error and runs the tool."""

from __future__ import annotations

import json

from git_lanes.hooks import protocol
from git_lanes.hooks.protocol import Answer
from git_lanes.model.calls import HookEvent, ToolCall, Verdict

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

CLI = "claude"
EVENTS = {"SessionStart": "session_start", "UserPromptSubmit": "prompt", "PreToolUse": "pre_tool",
          "PostToolUse": "post_tool", "PostToolUseFailure": "tool_failed", "PreCompact": "pre_compact",
          "Stop": "stop", "SubagentStop": "subagent_stop", "SessionEnd": "session_end"}
PRE_TOOL = "PreToolUse"
FILE_TOOLS = {"Write": "Write", "Edit": "Edit", "MultiEdit": "MultiEdit", "NotebookEdit": "NotebookEdit"}
READ_TOOLS = {"Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "NotebookRead", "TodoRead", "ToolSearch",
              "ListMcpResourcesTool", "ReadMcpResourceTool", "ExitPlanMode", "EnterPlanMode",
              "AskUserQuestion", "BashOutput", "TaskOutput", "Skill"}


def tool_call(payload: dict[str, Any]) -> ToolCall:
    name, data, call_id = protocol.call_basics(payload)
    if name in ("Bash", "PowerShell"):
        command = protocol.shell_text(data.get("command"), name)
        return ToolCall(name, "Bash", "exec", call_id, command, command=command)
    if name in FILE_TOOLS:
        path = protocol.require_text(data, "notebook_path" if name == "NotebookEdit" else "file_path", name)
        return ToolCall(name, FILE_TOOLS[name], "write", call_id, path, paths=(path,))
    if name in ("Agent", "Task"):
        return ToolCall(name, name, "agent", call_id, str(data.get("description") or data.get("prompt") or ""))
    if name == "TodoWrite":
        return ToolCall(name, name, "plan", call_id, f"{len(data.get('todos') or [])} todos",
                        plan=protocol.plan_steps(data.get("todos"), "content"))
    if name in READ_TOOLS:
        return ToolCall(name, name, "read", call_id, protocol.summary_of(data))
    # MCP tools and anything unknown may change things
    return protocol.unknown_tool(name, data, call_id)


def to_event(name: str, payload: dict[str, Any], env: dict[str, str]) -> HookEvent:
    canonical = EVENTS.get(name, "other")
    call = tool_call(payload) if canonical in ("pre_tool", "post_tool", "tool_failed") else None
    source = {"session_start": "source", "session_end": "reason", "pre_compact": "trigger"}.get(canonical)
    return protocol.event(
        CLI, canonical, payload, env, call,
        source=protocol.text(payload, source) if source else None,
        prompt=protocol.text(payload, "prompt"),
        error=protocol.text(payload, "error"),
        duration=protocol.seconds(payload.get("duration_ms")),
        subagent=protocol.text(payload, "agent_type"))


def export_env(variables: tuple[tuple[str, str], ...], env: dict[str, str]) -> None:
    """SessionStart may append `export` lines to the file CLAUDE_ENV_FILE names; Claude Code sources it
    before each Bash command, so the lane's variables (its ports) are there for every command."""
    path = env.get("CLAUDE_ENV_FILE")
    if not path:
        return
    import shlex

    with open(path, "a", encoding="utf-8") as out:
        out.writelines(f"export {name}={shlex.quote(value)}\n" for name, value in variables)


def answer(name: str, verdict: Verdict) -> Answer:
    out = protocol.hook_specific(name, verdict) if name in EVENTS else {}
    return Answer(json.dumps(out) if out else "")


def deny(name: str, reason: str) -> Answer:
    return answer(name, Verdict(False, reason))


def notice(name: str, message: str) -> Answer:
    return Answer(json.dumps({"systemMessage": message}))
