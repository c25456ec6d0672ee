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
        payload = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise Malformed("the hook payload on stdin is not UTF-8") from None
    except ValueError as exc:
        raise Malformed(f"the hook payload on stdin is not JSON ({exc})") from None
    except RecursionError:
        raise Malformed("the hook payload on stdin nests too deeply") from None
    if not isinstance(payload, dict):
        raise Malformed("the hook payload on stdin is not a JSON object")
    if b"\\ud" in raw or b"\\uD" in raw:  # only a \uD800-\uDFFF escape can make a surrogate
        try:
            where = _lone_surrogate(payload, "")
        except RecursionError:
            raise Malformed("the hook payload on stdin nests too deeply") from None
        if where is not None:
            raise Malformed(f"the hook payload on stdin is not valid Unicode: {where or 'a key'} holds a lone "
                            "surrogate (a \\uD800-\\uDFFF escape without its pair)")
    return payload


def _no_constant(name: str) -> Any:
    """NaN and Infinity, which Python's json reads but JSON has not (no CLI sends them: JavaScript writes null):
    taken in, one would reach the run's log and make every JSON answer that holds it unreadable."""
    raise ValueError(f"{name} is no JSON number")


def seconds(milliseconds: Any) -> float | None:
    """A duration the CLI measured in milliseconds, in seconds; None for what no clock gives (negative, or
    past any float, as 1e400 reads)."""
    if isinstance(milliseconds, bool) or not isinstance(milliseconds, (int, float)):
        return None
    return milliseconds / 1000 if 0 <= milliseconds < float("inf") else None


def _lone_surrogate(value: Any, where: str) -> str | None:
    """Where in the payload a lone surrogate sits (`tool_input.file_path`), or None. A string that is no
    Unicode cannot name a file, be checked as a shell line, nor be written to the log."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        at = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
        found = _lone_surrogate(key, at.lstrip(".")) if isinstance(key, str) else None
        found = found if found is not None else _lone_surrogate(item, at.lstrip("."))
        if found is not None:
            return found
    return None


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
    given = text(payload, "tool_use_id")
    return name, data, bounded_id(given) if given else derived_id(name, data)


ID_CHARS = 200  # far above the CLIs' ids (`toolu_` and 24 characters); the log keeps no more of one


def bounded_id(call_id: str) -> str:
    """The CLI's tool_use_id, bounded like the rest of what the log keeps of a call: a longer one keeps its
    start and a digest of the whole, so the same id before and after the call still pairs and two long ids
    that share a start stay apart."""
    if len(call_id) <= ID_CHARS:
        return call_id
    from git_lanes.model.digest import sha1

    return call_id[:ID_CHARS - 17] + "~" + sha1(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
             "target", "filename", "file", "files", "new_path", "newPath", "output_path", "directory", "dir_path",
             # a move's source is removed; a git server's repository is what its writing tools change
             "source", "sources", "old_path", "oldPath", "repo_path", "repoPath"}
READ_WORDS = {"read", "get", "list", "search", "find", "view", "show", "fetch", "query", "describe", "stat", "info",
              "grep", "glob", "ls", "cat", "head", "tail", "diff", "status", "log", "inspect", "lookup", "browse",
              "count", "exists", "tree", "open", "navigate", "snapshot"}
WRITE_WORDS = {"write", "edit", "create", "update", "delete", "remove", "move", "rename", "copy", "put", "set",
               "save", "patch", "apply", "append", "insert", "replace", "mkdir", "upload", "exec", "execute", "run",
               "make", "add", "download", "export", "extract", "install"}


# Input fields that hold a shell line, in the tools of MCP servers that run commands (`execute_command`,
# `run_command`, `start_process`), and those that say where it runs.
COMMAND_KEYS = ("command", "cmd")
DIRECTORY_KEYS = ("cwd", "workdir", "working_directory", "workingDirectory")


def unknown_tool(tool: str, data: dict, call_id: str) -> ToolCall:
    """A tool the hooks do not know (an MCP server's, a CLI's newer one), held to the same wall as the CLI's
    own: the write gate on its path fields, and, when it takes a command, the command policy on that line as
    on a shell tool's. Without this an MCP server that runs commands was a way around the deny and allow lists."""
    paths = guessed_paths(tool, data) + shared_writes(tool, data)
    lanes = restored_lanes(tool, data)
    command = guessed_command(tool, data)
    if command is None:
        return ToolCall(tool, tool, "exec", call_id, summary_of(data), paths=paths, lanes=lanes)
    where = next((data[key] for key in DIRECTORY_KEYS if isinstance(data.get(key), str) and data[key]), None)
    return ToolCall(tool, tool, "exec", call_id, summary_of(data), command=command, paths=paths, cwd=where,
                    lanes=lanes)


# How each CLI names the tools of git-lanes' own MCP server (`lanes`, as `git lanes install` and the Claude Code
# plugin add it): Claude Code and Codex `mcp__lanes__TOOL`, the plugin's `mcp__plugin_git-lanes_lanes__TOOL`,
# Gemini CLI `mcp_lanes_TOOL` (`mcp__lanes__TOOL` before March 2026).
OWN_TOOL_PREFIXES = ("mcp__lanes__", "mcp_lanes_", "mcp__plugin_git-lanes_lanes__")


def own_tool(tool: str) -> str | None:
    """The name of `tool` in git-lanes' own MCP server (`restore` for `mcp__lanes__restore`), or None for
    another server's tool."""
    prefix = next((p for p in OWN_TOOL_PREFIXES if tool.startswith(p)), None)
    return None if prefix is None else tool[len(prefix):]


# git-lanes' own tools that change what every lane shares, as `git lanes undo` and `gc` do (shell_lanes.py):
# undo moves back whatever the last operation moved (the trunk after a promotion), gc prunes shared refs.
_SHARED_TOOLS = frozenset({"undo", "gc"})


def shared_writes(tool: str, data: dict) -> tuple[str, ...]:
    """git's own files (`.git`), when git-lanes' own MCP tool changes refs every lane shares and is no dry run:
    the write gate then holds it as it holds `git lanes undo` run in a shell."""
    if own_tool(tool) not in _SHARED_TOOLS or data.get("dry_run") is True:
        return ()
    return (".git",)


def restored_lanes(tool: str, data: dict) -> tuple[str, ...]:
    """The lane whose workspace git-lanes' own `restore` tool rewrites, when the call names one: like
    `git lanes restore -w LANE`, a write there (without `lane` it restores the agent's own)."""
    if own_tool(tool) != "restore":
        return ()
    lane = data.get("lane")
    return (lane,) if isinstance(lane, str) and lane else ()


def guessed_command(tool: str, data: dict) -> str | None:
    """The shell line an unknown tool runs: its `command` (or `cmd`) field, with its `args` list when it has
    one; None for a tool whose name says it only reads, or whose input holds no command."""
    if _reads_only(tool):
        return None
    value = next((data[key] for key in COMMAND_KEYS if key in data), None)
    if value is None:
        return None
    line = shell_text(value, tool)  # a command field that is no command is refused, not skipped
    args = data.get("args")
    if isinstance(args, list) and args and all(isinstance(a, str) for a in args):
        import shlex

        line = f"{line} {shlex.join(args)}"
    return line


def _reads_only(tool: str) -> bool:
    import re

    words = {w.lower() for w in re.findall(r"[a-z]+|[A-Z][a-z]*", tool)}
    return bool(words & READ_WORDS) and not words & WRITE_WORDS


def guessed_paths(tool: str, data: dict) -> tuple[str, ...]:
    """Files a tool we do not know (an MCP server's, a CLI's newer one) may write: the path-named fields of
    its input, unless its name says it only reads (`read_text_file`, `list_directory`, `getFileInfo`). The
    write-gate then holds for it too, so a filesystem server cannot write where the agent's own tools may not."""
    if _reads_only(tool):
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
