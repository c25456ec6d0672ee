"""The REST API of the real `git lanes serve` against bodies a careless or hostile client sends: each is a
400 with the `usage` code, never a 500, and the server goes on serving."""

from __future__ import annotations

import http.client
import json
import os
import socket

import pytest
from conftest import run_cli, workspace
from http_helpers import Server


@pytest.fixture
def server(repo):
    with Server(repo) as running:
        yield running


@pytest.mark.parametrize("raw", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"title": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
    b'{"title": "a lone \\ud800 surrogate"}',
    b'{"title": "a \\u0000 NUL"}',
    b"\xff\xfe not UTF-8",
])
def test_a_body_the_server_cannot_take_is_a_400(server, raw):
    reply = server.request("POST", "/api/v1/tasks", raw=raw, token=server.token)
    assert reply.status == 400, reply.body
    assert reply.json["error"] in ("usage", "invalid_title") and "Traceback" not in reply.json["message"]
    assert server.get("/api/v1/tasks").json == []


def test_a_body_over_the_limit_is_refused_before_it_is_read(server):
    # The server read a whole body before looking at its size: a 300 MB body took 635 MB of its memory, and a
    # client announcing more than it sends held the request open until it hung up.
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as client:
        client.sendall(b"POST /api/v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       b"Authorization: Bearer " + server.token.encode() + b"\r\n"
                       b"Content-Length: 10000000000\r\n\r\n" + b"{" * 1000)
        reply = http.client.HTTPResponse(client)
        reply.begin()
        assert (reply.status, json.loads(reply.read())["message"]) == (400, "the request body is over 1048576 bytes")
    chunked = server.request("POST", "/api/v1/tasks", raw=iter([b" " * 65536] * 20), token=server.token,
                             headers={"Transfer-Encoding": "chunked"})
    assert (chunked.status, chunked.json["message"]) == (400, "the request body is over 1048576 bytes")
    assert server.get("/api/v1/tasks").json == []


def test_a_query_parameter_the_route_does_not_take_is_refused_not_ignored(server):
    # `?stauts=accepted` (misspelt) listed every transition, as if no filter had been asked for.
    reply = server.get("/api/v1/transitions?stauts=accepted")
    assert (reply.status, reply.json["error"]) == (400, "usage"), reply.body
    assert reply.json["message"] == "unknown query parameter(s) stauts; this route takes lane, status, agent, limit"
    bound = server.get("/api/v1/transitions?limit=-1")
    assert (bound.status, bound.json["message"]) == (400, "limit must be at least 0")
    assert server.get("/api/v1/transitions?status=accepted&limit=3").status == 200


@pytest.mark.parametrize("path", ["/api/v1/events", "/api/v1/session", "/api/openapi.json"])
def test_the_routes_that_take_no_query_refuse_one_too(server, path):
    """The event stream, the session and the API document answered `?since=42` as if it had been heeded
    (the stream from now, not from 42), where every other route names what it does not take."""
    reply = server.get(path + "?since=42")
    assert (reply.status, reply.json["error"]) == (400, "usage"), reply.body
    assert reply.json["message"] == "unknown query parameter(s) since; this route takes none"
    if path != "/api/v1/events":  # the stream itself stays open: the API tests read it
        assert server.get(path).status == 200


def test_a_query_parameter_given_twice_is_refused_not_half_taken(server):
    # `?status=accepted&status=rejected` listed only the rejected ones (the last value won, the first was
    # dropped without a word), and `?limit=1&limit=50` fifty.
    for query in ("status=accepted&status=rejected", "limit=1&limit=50"):
        reply = server.get(f"/api/v1/transitions?{query}")
        name = query.split("=")[0]
        assert (reply.status, reply.json["error"]) == (400, "usage"), reply.body
        assert reply.json["message"] == f"query parameter {name} given more than once; give it once"
    assert server.get("/api/v1/transitions?status=accepted&limit=3").status == 200


def test_a_file_name_that_is_not_utf8_is_answered_as_the_cli_prints_it(server, repo, api):
    # A workspace holding a file named in Latin-1 (unpacked from an old archive) made /status and the lane's
    # page a plain-text 500: the response was written as UTF-8, which a name held as lone surrogates is not.
    api.lane_create("feat")
    (workspace(repo, "feat") / os.fsdecode(b"caf\xe9.txt")).write_text("x\n")
    status = server.get("/api/v1/status")
    assert status.status == 200 and status.headers["content-type"] == "application/json", status.body
    assert status.json == run_cli("status", "--json", cwd=repo).json
    assert status.json["dirty"][0]["paths"] == {"caf\udce9.txt": "added"}  # as the CLI's --json has it
    lane = server.get("/api/v1/lanes/feat")
    assert lane.status == 200 and lane.json == run_cli("lane", "show", "feat", "--json", cwd=repo).json


def test_every_error_names_its_code_message_and_hint(server):
    """A client reads `hint` to know what to do next: a malformed request, a wrong method, a missing token or
    a refused origin answered without one (the key absent, not even null), unlike every not-found error. A
    request the route could not take points to the route in the API document; an error with no advice
    says so with null, as the MCP server does."""
    route_doc = "see `POST /api/v1/tasks` in `GET /api/openapi.json`"
    replies = {
        "wrong type": (server.post("/api/v1/tasks", {"title": 5}), 400, route_doc),
        "not an object": (server.request("POST", "/api/v1/tasks", raw=b"[1]", token=server.token), 400, route_doc),
        "unknown query": (server.get("/api/v1/tasks?stauts=open"), 400,
                          "see `GET /api/v1/tasks` in `GET /api/openapi.json`"),
        "wrong method": (server.post("/api/v1/status"), 405, "this path takes GET"),
        "no token": (server.post("/api/v1/tasks", {"title": "x"}, token=None), 401,
                     "send `Authorization: Bearer TOKEN`, or open the ?token= link `git lanes serve` printed"),
        "cross origin": (server.post("/api/v1/tasks", {"title": "x"}, headers={"Origin": "http://evil.example"}),
                         403, "send the request from the dashboard's page, or from a tool without an Origin header"),
        "no advice": (server.post("/api/v1/tasks", {"title": ""}), 400, None),
    }
    for case, (reply, status, hint) in replies.items():
        assert reply.status == status, (case, reply.body)
        assert {"error", "message", "hint"} <= set(reply.json), (case, reply.body)
        assert reply.json["hint"] == hint, case
    assert server.get("/api/v1/tasks").json == []


def test_a_field_given_twice_in_one_body_is_refused_not_half_taken(server):
    # `{"title": "a", "title": "b"}` created a task titled "b": JSON as Python reads it keeps the last value
    # and drops the first without a word, as the query string did before it refused a parameter given twice.
    reply = server.request("POST", "/api/v1/tasks", raw=b'{"title": "a", "title": "b"}', token=server.token)
    assert (reply.status, reply.json["error"]) == (400, "usage"), reply.body
    assert reply.json["message"] == "field title given more than once; give it once"
    assert server.get("/api/v1/tasks").json == []


def test_the_api_document_is_also_under_the_api_s_own_prefix(server):
    # Everything else is under /api/v1, so a client looked for /api/v1/openapi.json and found a 404.
    under_prefix = server.get("/api/v1/openapi.json")
    assert under_prefix.status == 200, under_prefix.body
    assert under_prefix.json == server.get("/api/openapi.json").json


def test_a_cost_over_its_bound_is_refused_in_the_api_s_words_and_documented(server, api):
    """`tokens_in: 10**13` was refused as "tokens-in must be at most ..." (the CLI's option, not this field),
    with no hint, and the document gave no maximum, so a client could not know the bound before sending."""
    api.lane_create("feat")
    bounds = {"tokens_in": 10**12, "tokens_out": 10**12, "api_calls": 10**9, "wall_time": 10**8, "cost_usd": 10**9}
    body = server.get("/api/openapi.json").json["paths"]["/api/v1/promote"]["post"]["requestBody"]
    documented = body["content"]["application/json"]["schema"]["properties"]
    for field, bound in bounds.items():
        assert documented[field]["maximum"] == bound, field
        reply = server.post("/api/v1/promote", {"lane": "feat", "dry_run": True, field: bound * 10})
        assert (reply.status, reply.json["error"]) == (400, "usage"), reply.body
        assert reply.json["message"] == f"{field} must be between 0 and {bound}"
        assert reply.json["hint"] == "see `POST /api/v1/promote` in `GET /api/openapi.json`"
    assert server.post("/api/v1/promote", {"lane": "feat", "dry_run": True, "tokens_in": 10**12}).status == 200


def test_a_malformed_request_s_hint_names_the_route_as_the_document_does(server, api):
    # The hint quoted the server's own path converter (`/lanes/{name:path}/reset`), which the document
    # does not have, and came before the error's code and message.
    api.lane_create("feat")
    reply = server.post("/api/v1/lanes/feat/reset", {"onto": 5})
    assert reply.status == 400, reply.body
    assert reply.json["hint"] == "see `POST /api/v1/lanes/{name}/reset` in `GET /api/openapi.json`"
    assert "/api/v1/lanes/{name}/reset" in server.get("/api/openapi.json").json["paths"]
    assert list(reply.json)[:3] == ["error", "message", "hint"]
    assert list(server.post("/api/v1/tasks", {"title": ""}).json)[:3] == ["error", "message", "hint"]
