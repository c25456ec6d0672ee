"""OpenAI Codex CLI's hooks (developers.openai.com/codex/hooks), modelled on Claude Code's: the same JSON on
stdin and the same deny. Its traps: a bare `permissionDecision: "allow"` is reported as a hook failure (so we
never send one: silence is the allow), shell calls arrive as `Bash`, file edits as `apply_patch` with the
patch text in `tool_input.command` (the write-gate reads the paths out of the patch), Stop answers must be
JSON, and there is no PostToolUseFailure (PostToolUse also follows a failing command: its `tool_response` is
the command's output, a string, which says the exit code only in the classic shell tool's format).

Stop and SubagentStop take no context for the model. Their answer has only `continue`, `decision`, `reason`,
`stopReason`, `suppressOutput` and `systemMessage` (the reference, §2.1, and Codex's own
`stop.command.output.schema.json`, which allows no other key): there is no `hookSpecificOutput`, so no
`additionalContext`, unlike Claude Code's Stop since v2.1.163. What the model is to continue with (a message
told to the run) goes as `decision: "block"` with it as the `reason`, which Codex makes the next user prompt;
a notice for the person goes as `systemMessage`; context a Stop verdict may carry is left out, as a key Codex
does not know would make the whole answer invalid."""

from __future__ import annotations

import json

from git_lanes.hooks import protocol
from git_lanes.hooks.protocol import Answer, Malformed
from git_lanes.model import patches
from git_lanes.model.calls import HookEvent, ToolCall, Verdict

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

CLI = "codex"
EVENTS = {"SessionStart": "session_start", "UserPromptSubmit": "prompt", "PreToolUse": "pre_tool",
          "PostToolUse": "post_tool", "PreCompact": "pre_compact", "Stop": "stop", "SubagentStop": "subagent_stop",
          "SessionEnd": "session_end"}
PRE_TOOL = "PreToolUse"
READ_TOOLS = {"view_image", "web_search", "read_file", "list_dir", "grep_files"}


def patch_paths(patch: str) -> tuple[str, ...]:
    """Every file an apply_patch envelope adds, updates, deletes or moves to (relative to the session's cwd)."""
    paths = patches.patch_paths(patch)
    if not paths:
        raise Malformed("apply_patch call whose patch names no file")
    return paths


def tool_call(payload: dict[str, Any]) -> ToolCall:
    name, data, call_id = protocol.call_basics(payload)
    if name in ("Bash", "shell", "exec_command", "local_shell"):
        command = protocol.shell_text(data.get("command"), name)
        workdir = data.get("workdir") if isinstance(data.get("workdir"), str) else None
        return ToolCall(name, "Bash", "exec", call_id, command, command=command, cwd=workdir)
    if name == "apply_patch":
        patch = protocol.require_text(data, "command", name) if "command" in data else \
            protocol.require_text(data, "input", name)
        paths = patch_paths(patch)
        return ToolCall(name, "Edit", "write", call_id, "patch: " + ", ".join(paths), paths=paths)
    if name in ("spawn_agent", "Agent"):
        return ToolCall(name, "Agent", "agent", call_id, protocol.summary_of(data))
    if name == "update_plan":
        return ToolCall(name, name, "plan", call_id, str(data.get("explanation") or "plan"),
                        plan=protocol.plan_steps(data.get("plan"), "step"))
    if name in READ_TOOLS:
        return ToolCall(name, name, "read", call_id, protocol.summary_of(data))
    return protocol.unknown_tool(name, data, call_id)


def failure(response: object) -> str | None:
    """Why a finished call failed, where its response says so: the classic shell tool's output begins
    `Exit code: N`, and a structured response may carry `exit_code` or `error`. Unified exec's plain output
    says nothing of the exit code; such a call counts as completed, as we cannot tell."""
    if isinstance(response, str) and response.startswith("Exit code: "):
        code = response[len("Exit code: "):].partition("\n")[0].strip()
        return f"exit code {code}" if code.lstrip("-").isdigit() and int(code) != 0 else None
    if isinstance(response, dict):
        code = response.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return f"exit code {code}"
        error = response.get("error")
        if isinstance(error, str) and error:
            return error
    return None


def to_event(name: str, payload: dict[str, Any], env: dict[str, str]) -> HookEvent:
    canonical = EVENTS.get(name, "other")
    call = tool_call(payload) if canonical in ("pre_tool", "post_tool") else None
    error = failure(payload.get("tool_response")) if canonical == "post_tool" else None
    if error:
        canonical = "tool_failed"
    source = {"session_start": "source", "session_end": "reason", "pre_compact": "trigger"}.get(canonical)
    return protocol.event(CLI, canonical, payload, env, call, error=error,
                          source=protocol.text(payload, source) if source else None,
                          prompt=protocol.text(payload, "prompt"), subagent=protocol.text(payload, "agent_type"))


def answer(name: str, verdict: Verdict) -> Answer:
    out = protocol.hook_specific(name, verdict) if name in EVENTS else {}
    if name in ("Stop", "SubagentStop"):
        # Codex's Stop answer has no hookSpecificOutput (see above): a continuation is decision/reason, a
        # notice systemMessage, and context has no place.
        out.pop("hookSpecificOutput", None)
    return Answer(json.dumps(out) if out else "")


def deny(name: str, reason: str) -> Answer:
    return answer(name, Verdict(False, reason))


def notice(name: str, message: str) -> Answer:
    return Answer(json.dumps({"systemMessage": message}))
