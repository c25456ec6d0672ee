"""The REST API of the real `git lanes serve` against bodies a careless or hostile client sends: each is a
400 with the `usage` code, never a 500, and the server goes on serving."""

from __future__ import annotations

import pytest
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
