"""How git-lanes starts agents: the `[agent]` and `[pipeline]` tables of `.lanes.toml` at the trunk's head.

    [agent]
    max_parallel = 4            # live agent processes at once (flow's dispatcher_max_spawn)
    cli = "claude"              # what `git lanes spawn` starts when --cli is not given
    stop_grace = 10             # seconds between SIGTERM and SIGKILL when a run is stopped

    [agent.claude]              # one table per CLI: claude, codex, gemini, custom
    command = ["claude", "-p", "{prompt}", "--permission-mode", "acceptEdits"]
    env = { CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS = "5000" }

    [pipeline]
    fix_attempts = 2            # fix runs after a failed verify before the task is blocked

A command is an argv list (no shell). `{prompt}`, `{prompt_file}`, `{lane}`, `{workspace}`, `{run}`,
`{task}` and `{agent}` in any element are replaced when the agent starts; other braces are left alone."""

from __future__ import annotations

import math
import re
from typing import Any

from git_lanes.errors import UserError
from git_lanes.model import config
from git_lanes.model.config import CONFIG
from git_lanes.model.frozen import Frozen, field

CLIS = ("claude", "codex", "gemini", "custom")
HOOKED_CLIS = ("claude", "codex", "gemini")
PLACEHOLDERS = ("prompt", "prompt_file", "lane", "workspace", "run", "task", "agent")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
# What `spawn` runs when `.lanes.toml` names no command for a CLI: each CLI's headless mode, permitted to
# edit files (the hooks are the wall: writes outside the lane's workspace and read-only phases are denied).
DEFAULT_COMMANDS: dict[str, tuple[str, ...]] = {
    "claude": ("claude", "-p", "{prompt}", "--permission-mode", "acceptEdits", "--output-format",
               "stream-json", "--verbose"),
    "codex": ("codex", "exec", "--full-auto", "{prompt}"),
    "gemini": ("gemini", "--approval-mode", "auto_edit", "--prompt", "{prompt}"),
}
DEFAULT_MAX_PARALLEL = 4
DEFAULT_STOP_GRACE = 10.0
DEFAULT_FIX_ATTEMPTS = 2
_AGENT_KEYS = {"max_parallel", "cli", "stop_grace", *CLIS}
_CLI_KEYS = {"command", "env"}


class Launch(Frozen):
    """The `[agent]` table: how many agents may run at once and the command each CLI starts with."""

    max_parallel: int = DEFAULT_MAX_PARALLEL
    cli: str = "claude"
    stop_grace: float = DEFAULT_STOP_GRACE
    commands: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_COMMANDS))
    env: dict[str, dict[str, str]] = field(default_factory=dict)
    fix_attempts: int = DEFAULT_FIX_ATTEMPTS

    def command(self, cli: str) -> tuple[str, ...]:
        check_cli(cli)
        if cli not in self.commands:
            raise UserError(f"{CONFIG} on the trunk declares no command for the {cli} agent CLI",
                            code="no_agent_command",
                            hint=f'add [agent.{cli}] command = ["my-agent", "{{prompt}}"] to {CONFIG} and commit it '
                                 "on the trunk")
        return self.commands[cli]

    def to_dict(self) -> dict[str, Any]:
        return {"max_parallel": self.max_parallel, "cli": self.cli, "stop_grace": self.stop_grace,
                "commands": {k: list(v) for k, v in self.commands.items()}, "env": self.env,
                "fix_attempts": self.fix_attempts}

    @classmethod
    def from_toml(cls, data: dict[str, Any]) -> Launch:
        agent = config.table(data, "agent", _AGENT_KEYS, invalid)
        pipeline = config.table(data, "pipeline", {"fix_attempts"}, invalid)
        commands, env = dict(DEFAULT_COMMANDS), {}
        for cli in CLIS:
            if cli not in agent:
                continue
            table = agent[cli]
            if not isinstance(table, dict):
                raise invalid(f"{CONFIG}: [agent.{cli}] must be a table")
            unknown = sorted(set(table) - _CLI_KEYS)
            if unknown:
                raise invalid(f"{CONFIG}: [agent.{cli}] has unknown key(s) {', '.join(unknown)}")
            if "command" in table:
                commands[cli] = config.string_list(table["command"], f"[agent.{cli}] command", invalid)
                if not commands[cli]:
                    raise invalid(f"{CONFIG}: [agent.{cli}] command must not be empty")
            if "env" in table:
                env[cli] = _env(table["env"], cli)
        default_cli = agent.get("cli", "claude")
        if default_cli not in CLIS:
            raise invalid(f"{CONFIG}: [agent] cli must be one of {', '.join(CLIS)}")
        return cls(max_parallel=_count(agent.get("max_parallel", DEFAULT_MAX_PARALLEL), "[agent] max_parallel", 1),
                   cli=default_cli, stop_grace=_seconds(agent.get("stop_grace", DEFAULT_STOP_GRACE)),
                   commands=commands, env=env,
                   fix_attempts=_count(pipeline.get("fix_attempts", DEFAULT_FIX_ATTEMPTS), "[pipeline] fix_attempts", 0))


def check_cli(cli: str) -> str:
    if cli not in CLIS:
        raise UserError(f"unknown agent CLI {cli!r}; one of {', '.join(CLIS)}", code="unknown_cli")
    return cli


def render(command: tuple[str, ...], values: dict[str, str]) -> list[str]:
    """`command` with each `{placeholder}` replaced; an element that was exactly `{prompt}` stays one
    argument however many lines the prompt has (no shell ever sees it)."""
    # One pass per element: a prompt that itself says `{lane}` keeps saying it.
    return [_PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), element) for element in command]


def invalid(message: str) -> UserError:
    return UserError(message, code="invalid_agent_config",
                     hint=f"fix {CONFIG} on the trunk; until then nothing can be spawned")


def _count(value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise invalid(f"{CONFIG}: {where} must be a whole number of at least {least}, got {value!r}")
    return value


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise invalid(f"{CONFIG}: [agent] stop_grace must be a non-negative number of seconds, got {value!r}")
    return float(value)


def _env(value: Any, cli: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and k and isinstance(v, str)
                                              for k, v in value.items()):
        raise invalid(f"{CONFIG}: [agent.{cli}] env must map variable names to strings")
    return dict(value)
