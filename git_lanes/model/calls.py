"""What an agent CLI's hook tells us, in one vocabulary for all of them: a hook event, the tool call it is
about, and the verdict the control plane returns. Each face (`git_lanes/hooks/<cli>.py`) translates its CLI's
payload into these records and the verdict back into its CLI's protocol."""

from __future__ import annotations

from git_lanes.errors import UnsupportedFormat
from git_lanes.model.frozen import Frozen

TYPE_CHECKING = False  # not `from typing import …`: the agent-hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

# read: looks only; write: changes files; exec: runs something (a shell, an MCP tool, anything unknown);
# agent: spawns a subagent; plan: records the agent's plan (TodoWrite, update_plan, write_todos).
KINDS = ("read", "write", "exec", "agent", "plan")
EVENTS = ("session_start", "prompt", "pre_tool", "post_tool", "tool_failed", "pre_compact", "stop",
          "subagent_stop", "session_end", "other")
SUMMARY_CHARS = 300


class ToolCall(Frozen):
    tool: str  # as the CLI names it
    canonical: str  # in Claude Code's vocabulary (Bash, Write, Edit, Read, Agent…), for weights
    kind: str
    id: str  # the CLI's tool_use_id, or one derived from the call where the CLI sends none (Gemini)
    summary: str  # a bounded description of the input, for the log
    command: str | None = None  # a shell line
    paths: tuple[str, ...] = ()  # files the call writes, absolute or relative to the session's cwd
    plan: tuple[dict[str, Any], ...] | None = None  # the agent's plan steps, for plan tools
    cwd: str | None = None  # where a shell command runs, when not in the session's directory
    lanes: tuple[str, ...] = ()  # lanes whose workspaces the call rewrites, by name (git-lanes' own restore tool)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UnsupportedFormat(f"unknown tool kind {self.kind!r}")
        if not self.tool or not self.id:
            raise UnsupportedFormat("a tool call needs a tool name and an id")
        object.__setattr__(self, "summary", bounded(self.summary))
        object.__setattr__(self, "paths", tuple(self.paths))
        object.__setattr__(self, "lanes", tuple(self.lanes))

    @property
    def changes_things(self) -> bool:
        """Writes, runs or spawns: what the spend gate stops."""
        return self.kind in ("write", "exec", "agent")


class HookEvent(Frozen):
    cli: str
    name: str  # one of EVENTS
    session: str
    cwd: str
    transcript: str | None = None
    source: str | None = None  # SessionStart source, SessionEnd reason, PreCompact trigger
    prompt: str | None = None
    call: ToolCall | None = None
    error: str | None = None
    duration: float | None = None  # seconds, when the CLI reports it
    model: str | None = None
    agent: str | None = None  # GIT_LANES_AGENT of the session
    run: str | None = None  # GIT_LANES_RUN of the session
    subagent: str | None = None
    home: str | None = None  # the session's HOME, for `~` in write targets

    def __post_init__(self) -> None:
        if self.name not in EVENTS:
            raise UnsupportedFormat(f"unknown hook event {self.name!r}")
        if not self.session:
            raise UnsupportedFormat("the hook payload has no session_id")
        if self.name in ("pre_tool", "post_tool", "tool_failed") and self.call is None:
            raise UnsupportedFormat("the hook payload has no tool_name")


class Verdict(Frozen):
    """What the control plane says back: allow or deny (with the reason the model sees), context to add for
    the model, a notice for the person watching, and, at a stop, what the model is to continue with (a
    Stop hook that blocks keeps the turn going with this as its instruction)."""

    allow: bool = True
    reason: str | None = None
    context: str | None = None
    notice: str | None = None
    proceed: str | None = None
    # Variables for the agent's environment (a lane's [setup] env), for CLIs that take them from a hook.
    env: tuple[tuple[str, str], ...] = ()


def bounded(text: str, limit: int = SUMMARY_CHARS) -> str:
    text = " ".join(str(text).replace("\n", " ⏎ ").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
