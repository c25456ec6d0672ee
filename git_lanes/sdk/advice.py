"""Hints in the Python SDK's words: a command a hint advises (`git lanes task show ab12cd34`) becomes the call
doing it from a session (`session.api.task_show("ab12cd34")`, `session.claim_task("ab12cd34", ahead=True)`)
where the SDK has one, else stays the CLI's command, labelled as such; an option of the command answered
(`--force`) becomes the call's keyword (`force=True`) (see git_lanes/model/advice.py)."""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any

from git_lanes.errors import LanesError
from git_lanes.model.advice import Equivalent, advised, call_of, is_placeholder, translated

_LIMIT = {"-n": "limit", "--limit": "limit"}
_WORKSPACE = {"-w": "lane", "--workspace": "lane"}
_PROMPT = {"-m": "prompt", "--message": "prompt", "--prompt": "prompt"}
# A call returns its record: `--json` needs no parameter.
_JSON = {"--json": ""}

# CLI command path -> the call doing the same from a session: `session.<method>` where the session does it as
# its agent, else `session.api.<method>` (the `Lanes` API the session holds), or `Lanes.<classmethod>`. The
# call's other required parameters are named as what the reader fills in (`PROMPT`), its agent as the
# session's. A test holds each side to the real CLI and the real signatures.
METHODS: dict[str, Equivalent] = {
    "accept": Equivalent("session.api.accept", ("transition_id",), {}, _JSON),
    "agent heartbeat": Equivalent("session.api.agent_heartbeat", ("agent",), {}, _JSON),
    "agent list": Equivalent("session.api.agent_list", (), {}, _JSON),
    "agent register": Equivalent("session.api.agent_register", ("agent",), {"--kind": "kind", "--lane": "lane"},
                                 _JSON),
    "board post": Equivalent("session.post", ("text",), {"--kind": "kind", "--to": "to_agent"}, _JSON),
    "board read": Equivalent("session.api.board_read", (), _LIMIT,
                             {"--all": "everything", "--unread": "unread_only", "--unanswered": "unanswered",
                              **_JSON}),
    "board resolve": Equivalent("session.api.board_resolve", ("post",), {}, _JSON),
    "board answer": Equivalent("session.api.board_answer", ("post", "text"), {}, _JSON),
    "budget clear": Equivalent("session.api.budget_clear", (), {"--lane": "lane", "--task": "task",
                                                                "--ticket": "ticket"}, _JSON),
    "budget set": Equivalent("session.api.budget_set", (), {"--lane": "lane", "--task": "task", "--ticket": "ticket",
                                                            "--usd": "usd", "--tokens": "tokens"}, _JSON),
    "budget show": Equivalent("session.api.budget_show", (), {"--lane": "lane", "--task": "task",
                                                              "--ticket": "ticket"}, _JSON),
    "claim list": Equivalent("session.api.claim_list", (), {"--agent": "agent"}, _JSON),
    "commit": Equivalent("session.api.commit", (), {**_WORKSPACE, **_PROMPT}, {"--auto-accept": "auto_accept", **_JSON}),
    "diff": Equivalent("session.api.diff", ("old", "new"), {}, _JSON),
    "dirty list": Equivalent("session.api.dirty_list", (), {}, _JSON),
    "dispatch status": Equivalent("session.api.dispatch_status", ("plan",), {}, _JSON),
    "gc": Equivalent("session.api.gc", (), {"--older-than": "older_than"}, {"--dry-run": "dry_run", **_JSON}),
    "history": Equivalent("session.api.history", (), {"--lane": "lane", "--status": "status", "--agent": "agent",
                                                      **_LIMIT}, _JSON),
    # No session without a repository set up for lanes: the class sets one up.
    "init": Equivalent("Lanes.init", ("path",), {"--trunk": "trunk"}, _JSON),
    "lane create": Equivalent("session.api.lane_create", ("name",), {"--from": "source"},
                              {"--no-setup": "!setup", **_JSON}),
    "lane delete": Equivalent("session.api.lane_delete", ("name",), {}, {"--force": "force", **_JSON}),
    "lane env": Equivalent("session.api.lane_env", ("lane",), {}, _JSON),
    "lane list": Equivalent("session.api.lane_list", (), {}, _JSON),
    "lane path": Equivalent("session.api.lane_path", ("name",), {}, _JSON),
    "lane reset": Equivalent("session.api.lane_reset", ("name",), {"--onto": "onto", "--reason": "reason"},
                             {"--force": "force", **_JSON}),
    "lane setup": Equivalent("session.api.lane_setup", ("lane",), {}, _JSON),
    "lane show": Equivalent("session.api.lane_show", ("name",), {}, _JSON),
    "logs": Equivalent("session.api.logs", ("run",), {}, _JSON),
    "op log": Equivalent("session.api.op_log", (), _LIMIT, _JSON),
    "op show": Equivalent("session.api.op_show", ("op",), {}, _JSON),
    "promote": Equivalent("session.api.promote", ("lane",), {"--into": "into", **_PROMPT},
                          {"--force": "force", "--auto-accept": "auto_accept", "--dry-run": "dry_run", **_JSON}),
    "ps": Equivalent("session.api.ps", (), {}, {"--all": "everything", **_JSON}),
    "publish": Equivalent("session.api.publish", ("ticket",), {"--remote": "remote", "--branch": "branch",
                                                               "--base": "base", "--pr": "pr"}, _JSON),
    "publish status": Equivalent("session.api.publish_status", (), {}, _JSON),
    "publish sync": Equivalent("session.api.publish_sync", (), {"--remote": "remote"}, _JSON),
    "pull": Equivalent("session.api.pull", ("remote",), {}, _JSON),
    "push": Equivalent("session.api.push", ("remote",), {}, _JSON),
    "reject": Equivalent("session.api.reject", ("transition_id",), {"--reason": "reason"}, _JSON),
    "restore": Equivalent("session.api.restore", ("state",), _WORKSPACE, {"--force": "force", **_JSON}),
    "run end": Equivalent("session.api.run_end", ("run",), {"--reason": "reason"}, _JSON),
    "run events": Equivalent("session.api.run_events", ("run",), {}, _JSON),
    "run list": Equivalent("session.api.run_list", (), {}, {"--active": "active", **_JSON}),
    "run phase": Equivalent("session.api.run_phase", ("run", "phase"), {}, _JSON),
    "run resume": Equivalent("session.api.run_resume", ("run",), {}, _JSON),
    "run start": Equivalent("session.api.run_start", (), {"--agent": "agent", "--lane": "lane", "--task": "task",
                                                          "--goal": "goal", "--phase": "phase"}, _JSON),
    "run show": Equivalent("session.api.run_show", ("run",), {}, _JSON),
    "run stats": Equivalent("session.api.run_stats", (), {"--by": "by", "--since": "since"}, _JSON),
    "show": Equivalent("session.api.show", ("transition_id",), {}, _JSON),
    "status": Equivalent("session.api.status", (), {}, _JSON),
    "stop": Equivalent("session.api.stop", ("run",), {"--reason": "reason"}, _JSON),
    "sync": Equivalent("session.api.sync", ("remote",), {}, _JSON),
    "task block": Equivalent("session.api.task_block", ("task",), {"--reason": "reason"}, _JSON),
    # As the session's agent, in the session's lane.
    "task claim": Equivalent("session.claim_task", ("task_id",), {"--version": "version"}, {"--ahead": "ahead", **_JSON}),
    "task done": Equivalent("session.done", ("task_id",), {}, _JSON),
    "task handoff": Equivalent("session.api.task_handoff", ("task",), {"--to": "to", "--note": "note"}, _JSON),
    "task list": Equivalent("session.api.task_list", (), {"--status": "status", "--owner": "owner"},
                            {"--ready": "ready", **_JSON}),
    "task resume": Equivalent("session.api.task_resume", ("task",), {}, _JSON),
    "task show": Equivalent("session.api.task_show", ("task",), {}, _JSON),
    "ticket link": Equivalent("session.api.ticket_link", ("ticket", "task"), {}, _JSON),
    "ticket list": Equivalent("session.api.ticket_list", (), {}, _JSON),
    "ticket open": Equivalent("session.api.ticket_open", ("title",), {}, _JSON),
    "ticket show": Equivalent("session.api.ticket_show", ("ticket",), {}, _JSON),
    "undo": Equivalent("session.api.undo", ("op",), {}, {"--dry-run": "dry_run", **_JSON}),
}
# A required parameter naming the agent is the session's own.
_AGENT_PARAMETERS = ("agent", "agent_id")
# Optional parameters named all the same, as what the reader fills in: `Lanes.init()` would set up the
# current directory, rarely the one the session was given.
_NAMED = {"Lanes.init": ("path",)}


def owner_of(name: str) -> type:
    """The class whose method `name` (a METHODS equivalent's name) calls."""
    from git_lanes.api import Lanes
    from git_lanes.sdk import AgentSession  # here: this module is loaded by git_lanes.sdk itself

    return AgentSession if name.startswith("session.") and not name.startswith("session.api.") else Lanes


@cache
def _parameters(name: str) -> tuple[inspect.Parameter, ...]:
    function = getattr(owner_of(name), name.rpartition(".")[2])
    return tuple(p for p in inspect.signature(function).parameters.values() if p.name not in ("self", "cls"))


def python_text(value: Any) -> str:
    """A parameter's value as Python writes it (strings in double quotes), a placeholder as it is."""
    if isinstance(value, str):
        if is_placeholder(value):
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if value.isprintable() else repr(value)
    return repr(value)


def method_call(words: tuple[str, ...]) -> str | None:
    """The SDK call doing what the CLI command `words` does, in backticks (`session.api.show("ab12cd34")`),
    if the SDK has one: the parameters the call takes by position in order while each is given (or
    required: the session's agent, or what the reader fills in), then the rest by keyword."""
    call = call_of(words, METHODS)
    if call is None:
        return None
    method, values = call
    rest = dict(values)
    positional = []
    for parameter in _parameters(method.name):
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            break
        if parameter.name in rest:
            positional.append(python_text(rest.pop(parameter.name)))
        elif parameter.default is not parameter.empty and parameter.name not in _NAMED.get(method.name, ()):
            break
        else:
            positional.append("session.agent_id" if parameter.name in _AGENT_PARAMETERS else parameter.name.upper())
    given = [*positional, *(f"{name}={python_text(value)}" for name, value in rest.items())]
    return f"`{method.name}({', '.join(given)})`"


def advise(hint: str | None) -> str | None:
    """`hint` naming the SDK's calls for the commands it advises."""
    return translated(hint, method_call, keyword) if hint else hint


def keyword(name: str, value: Any) -> str:
    """A keyword of the call that was made, set (`force=True`), as a hint names one."""
    return f"`{name}={python_text(value)}`"


def advised_error(exc: LanesError) -> LanesError:
    """`exc` with its hint, and those its details carry, in the SDK's words, and its hint in its text (a
    script printing the error sees what to do). Once: a call inside another call raises it through both."""
    if not exc.hint_in_text:
        exc.hint = advise(exc.hint)
        if exc.details:
            exc.details = advised(exc.details, lambda hint: advise(hint) or hint)
        exc.hint_in_text = True
    return exc
