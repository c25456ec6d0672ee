"""What the three agent CLIs' hook protocols share: reading the payload leniently (missing and extra fields
are normal), and the shape of an answer. Each CLI's module maps its event and tool names and its output."""

from __future__ import annotations

import json

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.calls import HookEvent, ToolCall, Verdict

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from typing import Any


class Answer:
    """What the hook process prints and exits with."""

    __slots__ = ("stdout", "stderr", "code")

    def __init__(self, stdout: str = "", stderr: str = "", code: int = 0) -> None:
        self.stdout, self.stderr, self.code = stdout, stderr, code


class Malformed(UnsupportedFormat):
    code = "malformed_payload"


MAX_PAYLOAD_BYTES = 16 << 20  # far above any tool call a CLI sends; reading more could exhaust memory


def load_payload(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise Malformed(f"the hook payload on stdin is larger than {MAX_PAYLOAD_BYTES >> 20} MiB")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise Malformed("the hook payload on stdin is not UTF-8") from None
    except ValueError as exc:
        raise Malformed(f"the hook payload on stdin is not JSON ({exc})") from None
    except RecursionError:
        raise Malformed("the hook payload on stdin nests too deeply") from None
    if not isinstance(payload, dict):
        raise Malformed("the hook payload on stdin is not a JSON object")
    return payload


def text(payload: dict, key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def tool_input(payload: dict) -> dict[str, Any]:
    value = payload.get("tool_input", {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Malformed("tool_input is not a JSON object")
    return value


def call_basics(payload: dict) -> tuple[str, dict[str, Any], str]:
    """(tool name, tool input, tool_use_id) of a tool event; an id is derived when the CLI sends none."""
    name = text(payload, "tool_name")
    if name is None:
        raise Malformed("the hook payload has no tool_name")
    data = tool_input(payload)
    return name, data, text(payload, "tool_use_id") or derived_id(name, data)


def require_text(data: dict, key: str, tool: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Malformed(f"{tool} call without a {key}")
    return value


def shell_text(value: Any, tool: str) -> str:
    """A shell command as a string (Codex's older shell tool sends an argv list)."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        import shlex

        return shlex.join(value)
    if isinstance(value, str) and value.strip():
        return value
    raise Malformed(f"{tool} call without a command")


# Input fields that name a file or directory, in the tools of MCP servers and of the CLIs themselves.
PATH_KEYS = {"file_path", "filePath", "path", "paths", "notebook_path", "target_file", "destination", "dest",
             "target", "filename", "file", "files", "new_path", "newPath", "output_path", "directory", "dir_path"}
READ_WORDS = {"read", "get", "list", "search", "find", "view", "show", "fetch", "query", "describe", "stat", "info",
              "grep", "glob", "ls", "cat", "head", "tail", "diff", "status", "log", "inspect", "lookup", "browse",
              "count", "exists", "tree", "open", "navigate", "snapshot"}
WRITE_WORDS = {"write", "edit", "create", "update", "delete", "remove", "move", "rename", "copy", "put", "set",
               "save", "patch", "apply", "append", "insert", "replace", "mkdir", "upload", "exec", "execute", "run",
               "make", "add", "download", "export", "extract", "install"}


def guessed_paths(tool: str, data: dict) -> tuple[str, ...]:
    """Files a tool we do not know (an MCP server's, a CLI's newer one) may write: the path-named fields of
    its input, unless its name says it only reads (`read_text_file`, `list_directory`, `getFileInfo`). The
    write-gate then holds for it too, so a filesystem server cannot write where the agent's own tools may not."""
    import re

    words = {w.lower() for w in re.findall(r"[a-z]+|[A-Z][a-z]*", tool)}
    if words & READ_WORDS and not words & WRITE_WORDS:
        return ()
    paths: list[str] = []
    for key, value in data.items():
        if key not in PATH_KEYS:
            continue
        values = value if isinstance(value, list) else [value]
        paths += [v for v in values if isinstance(v, str) and v.strip() and "://" not in v]
    return tuple(paths)


def derived_id(tool: str, data: dict) -> str:
    """An id for a call the CLI sends none for: the same call before and after it runs gets the same id."""
    from git_lanes.model.digest import sha1

    digest = sha1(json.dumps([tool, data], sort_keys=True, default=str).encode()).hexdigest()
    return "call-" + digest[:16]


def summary_of(data: dict) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


def plan_steps(items: Any, step_key: str) -> tuple[dict, ...]:
    if not isinstance(items, list):
        return ()
    return tuple({"step": str(item.get(step_key, ""))[:300], "status": str(item.get("status", "pending"))}
                 for item in items if isinstance(item, dict))


def event(cli: str, name: str, payload: dict, env: dict[str, str], call: ToolCall | None = None,
          **extra: Any) -> HookEvent:
    cwd = text(payload, "cwd") or env.get("PWD")
    if not cwd:
        raise Malformed("the hook payload has no cwd")
    if not cwd.startswith("/") and not (len(cwd) > 2 and cwd[1] == ":"):  # a POSIX or a Windows path
        raise Malformed(f"the hook payload's cwd {cwd[:200]!r} is not an absolute path")
    session = text(payload, "session_id")
    if session is None:
        raise Malformed("the hook payload has no session_id")
    transcript = payload.get("transcript_path")
    return HookEvent(cli=cli, name=name, session=session, cwd=cwd,
                     transcript=transcript if isinstance(transcript, str) and transcript else None,
                     model=text(payload, "model"), agent=env.get("GIT_LANES_AGENT") or None,
                     run=env.get("GIT_LANES_RUN") or None, home=env.get("HOME"), call=call, **extra)


def hook_specific(event_name: str, verdict: Verdict) -> dict[str, Any]:
    """Claude Code's (and Codex's) JSON answer for an event, or {} when there is nothing to say."""
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {}
    if not verdict.allow:
        specific = {"permissionDecision": "deny", "permissionDecisionReason": verdict.reason}
    if verdict.context:
        specific["additionalContext"] = verdict.context
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": event_name, **specific}
    if verdict.notice:
        out["systemMessage"] = verdict.notice
    if verdict.proceed:
        out["decision"], out["reason"] = "block", verdict.proceed
    return out
