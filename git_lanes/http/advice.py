"""Hints in the REST API's words: a command a hint advises (`git lanes task show ab12cd34`) becomes the route
doing it (`GET /api/v1/tasks/ab12cd34`) where this API has one, else stays the CLI's command, labelled as such;
an option of the command answered (`--force`) becomes the request's field (`"force": true`) (see
git_lanes/model/advice.py)."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any
from urllib.parse import quote

from git_lanes.model.advice import Equivalent, advised, call_of, translated, value_text

API = "/api/v1"
_PATH_PARAM = re.compile(r"\{(\w+)(?::path)?\}")

# CLI command path -> "METHOD /route" (as in routes.py) and the names its parameters take there: a path
# parameter by its name in the route, anything else in the query (GET) or the JSON body. A test holds each
# side to the real CLI and route table.
ROUTES: dict[str, Equivalent] = {
    "accept": Equivalent("POST /transitions/{id}/accept", ("id",)),
    "agent heartbeat": Equivalent("POST /agents/{agent}/heartbeat", ("agent",)),
    "agent list": Equivalent("GET /agents"),
    "agent register": Equivalent("POST /agents", ("agent_id",), {"--kind": "kind", "--lane": "lane"}),
    "board post": Equivalent("POST /board", ("text",), {"--kind": "kind", "--to": "to_agent"}),
    # GET /board is the whole board, read by no one in particular: every post, whoever it was sent to.
    "board read": Equivalent("GET /board", (), {"-n": "limit", "--limit": "limit"}, {"--all": "", "--json": ""}),
    "board resolve": Equivalent("POST /board/{post}/resolve", ("post",)),
    "board answer": Equivalent("POST /board/{post}/answer", ("post", "text")),
    "claim list": Equivalent("GET /claims", (), {"--agent": "agent"}),
    "diff": Equivalent("GET /diff", ("from", "to")),
    "dirty list": Equivalent("GET /dirty"),
    "history": Equivalent("GET /transitions", (), {"--lane": "lane", "--status": "status", "--agent": "agent",
                                                   "-n": "limit", "--limit": "limit"}),
    "lane create": Equivalent("POST /lanes", ("name",), {"--from": "from"}),
    "lane delete": Equivalent("DELETE /lanes/{name:path}", ("name",), {}, {"--force": "force"}),
    "lane list": Equivalent("GET /lanes"),
    "lane reset": Equivalent("POST /lanes/{name:path}/reset", ("name",), {"--onto": "onto", "--reason": "reason"},
                             {"--force": "force"}),
    "lane show": Equivalent("GET /lanes/{name:path}", ("name",)),
    "promote": Equivalent("POST /promote", ("lane",), {"--into": "into", "-m": "prompt", "--message": "prompt",
                                                       "--prompt": "prompt"},
                          {"--force": "force", "--auto-accept": "auto_accept", "--dry-run": "dry_run"}),
    "pull": Equivalent("POST /pull", ("remote",)),
    "push": Equivalent("POST /push", ("remote",)),
    "reject": Equivalent("POST /transitions/{id}/reject", ("id",), {"--reason": "reason"}),
    "run events": Equivalent("GET /runs/{run}/events", ("run",)),
    "run list": Equivalent("GET /runs", (), {}, {"--active": "active"}),
    "run show": Equivalent("GET /runs/{run}", ("run",)),
    "run stats": Equivalent("GET /runs/stats", (), {"--by": "by", "--since": "since"}),
    "show": Equivalent("GET /transitions/{id}", ("id",)),
    "status": Equivalent("GET /status"),
    "sync": Equivalent("POST /sync", ("remote",)),
    "task block": Equivalent("POST /tasks/{id}/block", ("id",), {"--reason": "reason"}),
    "task claim": Equivalent("POST /tasks/{id}/claim", ("id",), {"--version": "version", "--lane": "lane"},
                             {"--ahead": "ahead"}),
    "task done": Equivalent("POST /tasks/{id}/done", ("id",), {}, {"--no-integrate": "!integrate"}),
    "task handoff": Equivalent("POST /tasks/{id}/handoff", ("id",), {"--to": "to_agent", "--note": "note"}),
    "task list": Equivalent("GET /tasks", (), {"--status": "status", "--owner": "owner"}, {"--ready": "ready_only"}),
    "task resume": Equivalent("POST /tasks/{id}/resume", ("id",)),
    "task show": Equivalent("GET /tasks/{id}", ("id",)),
    "ticket list": Equivalent("GET /tickets"),
    "ticket show": Equivalent("GET /tickets/{id}", ("id",)),
}


def route_call(words: tuple[str, ...]) -> str | None:
    """The request doing what the CLI command `words` does, in backticks (`GET /api/v1/tasks?ready_only=true`,
    `POST /api/v1/promote {"lane": "x"}`), if the API has a route for it."""
    call = call_of(words, ROUTES)
    if call is None:
        return None
    route, values = call
    method, path = route.name.split(" ", 1)
    rest = dict(values)

    def filled(match: re.Match[str]) -> str:
        value = rest.pop(match.group(1), None)
        return match.group(0) if value is None else quote(str(value), safe="/@:+,")

    target = API + _PATH_PARAM.sub(filled, path)
    if not rest:
        return f"`{method} {target}`"
    if method == "GET":
        query = "&".join(f"{name}={_query_value(value)}" for name, value in rest.items())
        return f"`{method} {target}?{query}`"
    body = ", ".join(f'"{name}": {value_text(value)}' for name, value in rest.items())
    return f"`{method} {target} {{{body}}}`"


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return quote(str(value), safe="/@:+,")


def advise(hint: str | None, query: Collection[str] = ()) -> str | None:
    """`hint` naming this API's routes for the commands it advises; `query`: the parameters the request
    answered takes in its query string rather than its body."""
    return translated(hint, route_call, lambda name, value: parameter(name, value, name in query)) if hint else hint


def parameter(name: str, value: Any, in_query: bool = False) -> str:
    """A parameter of the request that was made, set, as a hint names one: a field of its body
    (`"force": true`), or of its query string (`?force=true`) where the route takes it there."""
    return f"`?{name}={_query_value(value)}`" if in_query else f'`"{name}": {value_text(value)}`'


def advised_result(data: Any, query: Collection[str] = ()) -> Any:
    """A result or error record (JSON-shaped) with the hints it carries in this API's words; `query` as
    for `advise`."""
    return advised(data, lambda hint: advise(hint, query) or hint)
