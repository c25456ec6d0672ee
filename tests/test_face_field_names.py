"""One concept, one name in every face: a REST body or query field is spelt as the MCP tool doing the same
spells its argument (agent_id, task_id, ticket_id, to_agent, unread_only, all_posts, unanswered_only,
ready_only), and so is an SDK keyword. The former REST and SDK spellings are still taken (callers written for
them keep working), documented as deprecated; both spellings at once are refused."""

from __future__ import annotations

import pytest
from http_helpers import Server

from git_lanes import AgentSession
from git_lanes.errors import UserError
from git_lanes.http import openapi, routes
from git_lanes.mcp.binding import Binding
from git_lanes.mcp.server import argument_names, catalog

# "METHOD /route" -> the MCP tool doing the same, and the route's fields the tool has no use for.
SAME_AS = {
    "POST /agents": ("register_agent", set()),
    "POST /tasks": ("create_task", set()),
    "GET /tasks": ("list_tasks", set()),
    "POST /tasks/{id}/claim": ("claim_task", set()),
    "POST /tasks/{id}/done": ("task_done", set()),
    "POST /tasks/{id}/block": ("block_task", set()),
    "POST /tasks/{id}/resume": ("resume_task", set()),
    "POST /tasks/{id}/handoff": ("handoff_task", set()),
    "POST /tasks/{id}/depends": ("add_dependency", set()),
    "POST /tickets": ("open_ticket", set()),
    "POST /tickets/{id}/link": ("link_task_to_ticket", set()),
    "GET /claims": ("list_claims", set()),
    "POST /claims": ("claim_files", set()),
    "POST /claims/release": ("release_files", set()),
    "POST /dirty": ("publish_dirty", set()),
    "POST /board": ("post_board", set()),
    "GET /board": ("read_board", set()),
    "POST /board/read": ("read_board", set()),
    "POST /board/{post}/resolve": ("resolve_question", set()),
    "POST /board/{post}/answer": ("answer_question", set()),
    "GET /transitions": ("history", set()),
    "POST /transitions/{id}/reject": ("reject", set()),
    # the intent and cost of the promotion's merge commit, which the tool leaves at their defaults
    "POST /promote": ("promote", {"agent_type", "model", "tokens_in", "tokens_out", "api_calls", "wall_time",
                                  "cost_usd"}),
}


def test_each_rest_field_is_spelt_as_the_mcp_tool_doing_the_same_spells_it(repo):
    tools = {spec.fn.__name__: argument_names(spec.fn) for spec in catalog(Binding(repo, None))}
    served = {f"{r.method} {r.path}": r for r in routes.ROUTES}
    for name, (tool, rest_only) in SAME_AS.items():
        route = served[name]
        fields = {p.name for p in route.query + route.body}
        assert fields - rest_only <= tools[tool], f"{name}: {sorted(fields - rest_only - tools[tool])} " \
                                                  f"are not spelt as {tool} spells them"


def test_every_former_spelling_is_documented_as_deprecated(api):
    document = openapi.document(routes.ROUTES, "/api/v1", "0", type(api))
    read = document["paths"]["/api/v1/board/read"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"agent_id", "unread_only", "all_posts", "unanswered_only"} <= set(read["properties"])
    for former in ("agent", "unread", "all", "unanswered"):
        assert read["properties"][former]["deprecated"] is True
    assert read["required"] == ["agent_id"]
    tasks = {p["name"]: p for p in document["paths"]["/api/v1/tasks"]["get"]["parameters"]}
    assert tasks["ready"]["deprecated"] is True and "deprecated" not in tasks["ready_only"]


def test_the_board_takes_the_mcp_spelling_and_its_former_one_alike(repo, api):
    api.board_post("for b", "a", to="b")
    api.board_post("for c", "a", to="c")
    with Server(repo) as server:
        canonical = server.post("/api/v1/board/read", {"agent_id": "b", "all_posts": True, "unanswered_only": False})
        former = server.post("/api/v1/board/read", {"agent": "c", "all": True, "unread": False})
        both = server.post("/api/v1/board/read", {"agent": "b", "agent_id": "b"})
        posted = server.post("/api/v1/board", {"text": "hi", "agent_id": "a", "to_agent": "b"})
        posted_before = server.post("/api/v1/board", {"text": "hello", "agent": "a", "to": "b"})
        handed = server.post("/api/v1/tasks", {"title": "t", "actor": "lead"})
        ready = server.get("/api/v1/tasks?ready_only=true")
        ready_before = server.get("/api/v1/tasks?ready=true")
    assert canonical.status == former.status == 200, (canonical.json, former.json)
    assert {p["text"] for p in canonical.json["posts"]} == {p["text"] for p in former.json["posts"]} == \
        {"for b", "for c"}
    assert (both.status, both.json["error"]) == (400, "usage") and "give it once" in both.json["message"]
    assert posted.status == posted_before.status == handed.status == 200
    assert [p["to"] for p in api.board_read(everything=True)["posts"][-2:]] == ["b", "b"]
    assert ready.status == 200 and ready.json == ready_before.json and len(ready.json) == 1


def test_the_sdk_takes_the_mcp_spelling_and_its_former_one_alike(repo):
    with AgentSession(repo, "a") as session:
        session.post("new spelling", to_agent="b")
        session.post("former spelling", to="b")
        with pytest.raises(UserError) as both:
            session.post("both", to="b", to_agent="c")
        assert both.value.code == "usage"
        assert session.read_board(unanswered_only=True)["posts"] == []
        assert session.wait(timeout_s=0)["reason"] == session.wait(timeout=0)["reason"] == "timeout"
    with AgentSession(repo, "b") as reader:
        assert [p["text"] for p in reader.read_board()["posts"]] == ["new spelling", "former spelling"]
