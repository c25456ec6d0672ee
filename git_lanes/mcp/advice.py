"""Hints in the MCP server's words: a command a hint advises (`git lanes task list --ready`) becomes the tool
that does it here (`list_tasks(ready_only=true)`) when this server offers that tool, else stays the CLI's
command, labelled as such; an option of the command answered (`--force`) becomes the parameter (`force=true`)
(see git_lanes/model/advice.py)."""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from git_lanes.model.advice import Equivalent, advised, call_of, translated, value_text

_LIMIT = {"-n": "limit", "--limit": "limit"}
_WORKSPACE = {"-w": "lane", "--workspace": "lane"}
_PROMPT = {"-m": "prompt", "--message": "prompt", "--prompt": "prompt"}

# CLI command path -> the tool doing the same here. A test holds each side to the real CLI and tool list.
TOOLS: dict[str, Equivalent] = {
    "accept": Equivalent("accept", ("transition_id",)),
    "agent heartbeat": Equivalent("heartbeat", ("agent_id",)),
    "agent register": Equivalent("register_agent", ("agent_id",), {"--kind": "kind", "--lane": "lane"}),
    "board post": Equivalent("post_board", ("text",), {"--kind": "kind", "--to": "to_agent"}),
    # A tool's result is JSON already: `--json` needs no parameter.
    "board read": Equivalent("read_board", (), _LIMIT, {"--all": "all_posts", "--unread": "unread_only",
                                                         "--unanswered": "unanswered_only", "--json": ""}),
    "board resolve": Equivalent("resolve_question", ("post",)),
    "board answer": Equivalent("answer_question", ("post", "text")),
    "claim list": Equivalent("list_claims", (), {"--agent": "agent"}),
    "commit": Equivalent("commit", (), {**_WORKSPACE, **_PROMPT}, {"--auto-accept": "auto_accept"}),
    "diff": Equivalent("diff", ("a", "b")),
    "dirty list": Equivalent("list_dirty"),
    "dirty publish": Equivalent("publish_dirty"),
    "dispatch status": Equivalent("dispatch_status", ("plan",)),
    "gc": Equivalent("gc", (), {"--older-than": "older_than"}, {"--dry-run": "dry_run"}),
    "history": Equivalent("history", (), {"--lane": "lane", "--status": "status", "--agent": "agent", **_LIMIT}),
    # An agent's lane is made with its workspace, and given to it, in one step.
    "lane create": Equivalent("assign_worktree", ("lane",), {"--from": "base"}, {"--no-setup": "!setup"}),
    "lane env": Equivalent("lane_env", ("lane",)),
    "lane list": Equivalent("status"),  # its `lanes` are the lane list
    "op log": Equivalent("op_log", (), _LIMIT),
    "promote": Equivalent("promote", ("lane",), {"--into": "into", **_PROMPT},
                          {"--force": "force", "--auto-accept": "auto_accept", "--dry-run": "dry_run"}),
    "propose": Equivalent("propose", (), {**_WORKSPACE, **_PROMPT}),
    "publish": Equivalent("publish_ticket", ("ticket_id",), {"--remote": "remote", "--branch": "branch",
                                                             "--base": "base", "--pr": "pr"}),
    "publish status": Equivalent("publisher_status"),
    # Listed so that `sync` is not read as the ticket `publish` takes; the tool closes one ticket at a time.
    "publish sync": Equivalent("close_ticket_on_merge", (), {"--remote": "remote"}),
    "reject": Equivalent("reject", ("transition_id",), {"--reason": "reason"}),
    "restore": Equivalent("restore", ("state",), _WORKSPACE, {"--force": "force"}),
    "show": Equivalent("show", ("transition_id",)),
    "status": Equivalent("status"),
    "task block": Equivalent("block_task", ("task_id",), {"--reason": "reason"}),
    "task claim": Equivalent("claim_task", ("task_id",), {"--version": "version", "--lane": "lane"},
                             {"--ahead": "ahead"}),
    "task done": Equivalent("task_done", ("task_id",), {}, {"--no-integrate": "!integrate"}),
    "task handoff": Equivalent("handoff_task", ("task_id",), {"--to": "to_agent", "--note": "note"}),
    "task list": Equivalent("list_tasks", (), {"--status": "status", "--owner": "owner"}, {"--ready": "ready_only"}),
    "task resume": Equivalent("resume_task", ("task_id",)),
    "task show": Equivalent("get_task", ("task_id",)),
    "ticket link": Equivalent("link_task_to_ticket", ("ticket_id", "task_id")),
    "ticket list": Equivalent("list_tickets"),
    "ticket open": Equivalent("open_ticket", ("title",)),
    "undo": Equivalent("undo", ("operation",), {}, {"--dry-run": "dry_run"}),
}


def tool_call(words: tuple[str, ...], offered: Container[str]) -> str | None:
    """The tool call doing what the CLI command `words` does, in backticks (`show(transition_id="ab12cd34")`,
    a bare name when it takes nothing), if this server offers that tool."""
    call = call_of(words, TOOLS)
    if call is None or call[0].name not in offered:
        return None
    tool, values = call
    given = ", ".join(f"{name}={value_text(value)}" for name, value in values.items())
    return f"`{tool.name}({given})`" if given else f"`{tool.name}`"


def advise(hint: str | None, offered: Container[str]) -> str | None:
    """`hint` naming this server's tools (those in `offered`) for the commands it advises."""
    return translated(hint, lambda words: tool_call(words, offered), parameter) if hint else hint


def parameter(name: str, value: Any) -> str:
    """A parameter of the tool that was called, set (`force=true`), as a hint names one."""
    return f"`{name}={value_text(value)}`"


def advised_result(data: Any, offered: Container[str]) -> Any:
    """A result (JSON-shaped) with the hints it carries in this server's words."""
    return advised(data, lambda hint: advise(hint, offered) or hint)
