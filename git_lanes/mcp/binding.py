"""What every tool shares: the repository held open, the agent the server was started for, and the shapes
results and errors take in MCP. No decisions live here: defaults come from the API (the agent's lane), and
errors keep the code the API gave them."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

from git_lanes.api import Lanes
from git_lanes.errors import EXIT_USER, LanesError, UserError
from git_lanes.mcp.advice import advise, advised_result
from git_lanes.model.ids import validate_agent_id


def plain(result: Any) -> Any:
    """An API result as JSON-ready data, whether the API gave a record (`to_dict()`) or plain dicts."""
    if hasattr(result, "to_dict"):
        return plain(result.to_dict())
    if isinstance(result, dict):
        return {key: plain(value) for key, value in result.items()}
    if isinstance(result, (list, tuple)):
        return [plain(value) for value in result]
    return result


def cli_json(result: Any) -> str:
    """The text the CLI's `--json` prints for the same result."""
    return json.dumps(plain(result), indent=2, sort_keys=True, default=str)


def error_payload(exc: LanesError, offered: Container[str] = ()) -> dict:
    """`{"error": {code, reason, message, hint, exit_code, details}}`: `code` is the error's kind (conflict,
    not_found, invalid, refused, gate_failed, ...), the kind the CLI's exit code comes from; `reason` is the
    precise code the CLI's `--json` prints (task_claimed, version_conflict, unknown_task, ...). The hint
    names the tools in `offered` (this server's) for the commands it advises."""
    kind = type(exc).code
    error: dict[str, Any] = {"code": exc.code if kind == LanesError.code else kind, "reason": exc.code,
                             "message": exc.message, "hint": advise(exc.hint, offered),
                             "exit_code": exc.exit_code or EXIT_USER}
    if exc.details:
        error["details"] = advised_result(json.loads(json.dumps(exc.details, default=str)), offered)
    return {"error": error}


class Binding:
    """The repository opened once per worker thread (pygit2 objects are not shared between threads; the
    SDK runs each tool call on a worker thread, and a pool reuses them), and the server's agent."""

    def __init__(self, path: str | os.PathLike, agent: str | None) -> None:
        self.path = path
        # A bad --agent (or GIT_LANES_AGENT) stops the server at start, rather than failing every call.
        self.default_agent = validate_agent_id(agent) if agent else None
        self.offered: frozenset[str] = frozenset()  # the tools the server offers, which hints may name
        self._local = threading.local()
        # opened now, so a path that is not a lanes repository fails at start, not on a call
        self._first = self._local.api = Lanes(self.path)

    @property
    def api(self) -> Lanes:
        api = getattr(self._local, "api", None)
        if api is None:
            api = self._local.api = self._first.another()
        return api

    def agent(self, given: str | None) -> str:
        """The acting agent: the call's `agent_id`, else the server's. An empty one is refused, as the CLI
        refuses `--agent ""`, rather than taken for none."""
        if given is not None:
            return validate_agent_id(given)
        agent = self.default_agent
        if not agent:
            raise UserError("no agent_id given, and the server was started without one", code="no_agent",
                            hint="pass agent_id, or start this server with --agent ID (or GIT_LANES_AGENT set)")
        return agent

    def actor(self, given: str | None) -> str | None:
        """Who acts where acting anonymously is allowed (the API then uses git's user name). A given
        `agent_id` goes to the API as given, an empty one too: the API decides what it means, as for the
        CLI's `--agent ""`."""
        return given if given is not None else self.default_agent

    def lane(self, given: str | None, agent: str | None) -> str:
        """The named lane, else the lane assigned to the agent."""
        if given:
            return given
        return self.api.agent_lane(self.agent(agent))

    def touched(self, agent: str | None, call: Callable[[], Any]) -> Any:
        """Run `call` as `agent`, extending its lease first (Lockage: any tool call from an agent does)."""
        agent = self.actor(agent)
        if agent:
            self.api.touch_agent(agent)
        return call()


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its function (its name, docstring, typed parameters and return type become the tool), the
    tool set it belongs to, whether it only reads, and whether calling it extends the agent's lease (tools
    whose own ledger op does so say False)."""

    fn: Callable[..., Any]
    toolset: str = "core"
    read_only: bool = False
    touches: bool = True
