"""How `git lanes mcp` starts: `initialize` is answered before the SDK is imported, with exactly the answer
the SDK gives (the server checks the SDK's own answer against it and warns on stderr if they differ), and
`--http` serves streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import call
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from git_lanes.mcp import launch


def initialize(request_id, version: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_the_early_answer_knows_the_sdks_handshake_versions():
    assert launch.HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


def converse(repo, messages: list[dict], answers: int) -> tuple[list[dict], str]:
    """Send `messages` to a fresh server, read `answers` lines, then hang up; (answers, standard error)."""
    server = subprocess.Popen([sys.executable, "-m", "git_lanes", "mcp"], cwd=repo, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        server.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
        server.stdin.flush()
        got = [json.loads(server.stdout.readline()) for _ in range(answers)]
        server.stdin.close()
        assert server.wait(timeout=60) == 0
        assert server.stdout.read() == ""  # nothing more: in particular no second answer to initialize
        errors = server.stderr.read()
        assert "warning" not in errors, errors  # the relay finished by itself once the SDK stopped
        return got, errors
    finally:
        server.kill()


@pytest.mark.parametrize("version", ["2025-06-18", "1999-01-01"])
def test_initialize_is_answered_early_and_the_sdk_agrees(repo, version):
    answers, errors = converse(repo, [initialize("init-1", version),
                                      {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                      {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                                      {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                       "params": {"name": "list_tasks", "arguments": {}}}], 3)
    assert sorted(str(a["id"]) for a in answers) == ["2", "3", "init-1"]
    first = answers[0]["result"]
    expected = version if version in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    assert first["protocolVersion"] == expected and first["serverInfo"]["name"] == "git-lanes"
    assert "differently" not in errors, errors  # the SDK's own answer, dropped, matched the early one
    by_id = {a["id"]: a for a in answers}
    assert len(by_id[2]["result"]["tools"]) > 30
    assert json.loads(by_id[3]["result"]["content"][0]["text"]) == []


def test_a_first_message_that_is_not_initialize_is_left_to_the_sdk(repo):
    answers, _ = converse(repo, [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, initialize(2, "2025-11-25")], 2)
    by_id = {a["id"]: a for a in answers}
    assert "error" in by_id[1]  # before initialize, as the SDK rules
    assert by_id[2]["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("busy", [False, True])
def test_ctrl_c_stops_a_stdio_server_whose_client_keeps_stdin_open(repo, busy):
    # The SDK reads its stdin on a worker thread that a cancellation waits for: Ctrl-C (SIGINT) left the
    # server hanging until its stdin closed, which for a person at a terminal is never.
    server = subprocess.Popen([sys.executable, "-m", "git_lanes", "mcp", "--agent", "a1"], cwd=repo,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        messages = [initialize(1, "2025-06-18"), {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
        server.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
        server.stdin.flush()
        assert [json.loads(server.stdout.readline())["id"] for _ in range(2)] == [1, 2]  # the SDK serves
        if busy:  # in the middle of a call
            server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "wait_for_unblock", "arguments": {"timeout_s": 120}, "_meta": {"progressToken": "w"}}}) + "\n")
            server.stdin.flush()
            assert "progress" in server.stdout.readline()
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 130
        assert "Traceback" not in server.stderr.read()
    finally:
        server.kill()


def test_streamable_http_on_loopback(repo):
    server = subprocess.Popen([sys.executable, "-m", "git_lanes", "mcp", "--http", "0", "--agent", "web-1"],
                              cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=os.environ.copy())
    try:
        line = server.stderr.readline()
        assert "MCP (streamable HTTP) at http://127.0.0.1:" in line, line
        url = line.split(" at ", 1)[1].strip()

        async def scenario():
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                task = await call(session, "create_task", title="over http")
                return await call(session, "claim_task", task_id=task["task"])

        claimed = anyio.run(scenario)
        assert claimed["owner"] == "web-1"
    finally:
        server.terminate()
        server.wait(timeout=30)
