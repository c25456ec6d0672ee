"""`git lanes mcp` against what a careless or hostile client sends: lines the SDK cannot read (they must be
answered, or the request waits forever), arguments a tool does not take (refused, never silently dropped),
and a bad agent given at start (refused at once, not on every call)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading

import anyio
from conftest import run_cli
from mcp_helpers import call, fails, mcp_session

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def tool_call(request_id: int, arguments: str) -> str:
    """A raw tools/call line whose arguments are `arguments`, written as JSON text by hand."""
    return ('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "create_task", '
            '"arguments": %s}}' % (request_id, arguments))


class Answers:
    """The server's lines as they come; a line it never answers fails the test instead of hanging it."""

    def __init__(self, server: subprocess.Popen) -> None:
        self.lines: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=lambda: [self.lines.put(line) for line in server.stdout], daemon=True)
        self.reader.start()

    def take(self, count: int) -> list[dict]:
        answers = []
        for _ in range(count):
            try:
                answers.append(json.loads(self.lines.get(timeout=120)))
            except queue.Empty:
                raise AssertionError(f"only {len(answers)} of {count} answers came: {answers}") from None
        return answers

    def rest(self) -> list[str]:
        self.reader.join(timeout=60)
        return list(self.lines.queue)


def test_a_line_the_sdk_cannot_read_is_answered_and_the_server_goes_on(repo):
    lines = [json.dumps(INITIALIZE), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             "this is not JSON",
             tool_call(2, '{"title": "\\ud800 a lone surrogate"}'),
             tool_call(3, '{"title": %s}' % ("[" * 300 + "]" * 300)),
             '{"id": 4, "method": "tools/list"}',
             '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "\\udfff"}}',
             "",
             json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})]
    server = subprocess.Popen([sys.executable, "-m", "git_lanes", "mcp", "--agent", "a1"], cwd=repo,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        server.stdin.write("".join(line + "\n" for line in lines))
        server.stdin.flush()
        wire = Answers(server)
        answers = wire.take(6)
        server.stdin.close()
        assert server.wait(timeout=60) == 0
        assert wire.rest() == []  # the bad notification and the blank line got no answer
    finally:
        server.kill()
    by_id = {str(answer["id"]): answer for answer in answers}
    assert sorted(by_id) == ["1", "2", "3", "4", "5", "None"]
    assert by_id["None"]["error"]["code"] == -32700
    assert by_id["2"]["error"]["code"] == by_id["3"]["error"]["code"] == -32700
    assert by_id["4"]["error"]["code"] == -32600
    assert len(by_id["5"]["result"]["tools"]) > 30
    tasks = run_cli("task", "list", "--json", cwd=repo)
    assert tasks.json == []  # nothing the SDK could not read was acted on


def test_an_argument_the_tool_does_not_take_is_refused_not_dropped(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            await call(session, "claim_files", globs=["src/**", "docs/**"])
            misspelt = await fails(session, "release_files", glob=["docs/**"])
            claims = await call(session, "list_claims")
            context = await fails(session, "wait_for_unblock", timeout_s=0, ctx={})
            schemas = {t.name: t.input_schema for t in (await session.list_tools()).tools}
            return misspelt, claims, context, schemas

    misspelt, claims, context, schemas = anyio.run(scenario)
    assert (misspelt["code"], misspelt["reason"], misspelt["exit_code"]) == ("usage", "unknown_argument", 2)
    assert "'glob'" in misspelt["message"] and "globs" in misspelt["message"]
    assert sorted(row["glob"] for row in claims) == ["docs/**", "src/**"]  # nothing was released
    assert context["reason"] == "unknown_argument"
    assert all(schema["additionalProperties"] is False for schema in schemas.values())
    assert "ctx" not in schemas["wait_for_unblock"]["properties"]


def test_a_bad_agent_stops_the_server_at_start(repo):
    given = run_cli("mcp", "--agent", "no spaces", cwd=repo)
    from_env = run_cli("mcp", cwd=repo, env={"GIT_LANES_AGENT": "a/b"})
    for result in (given, from_env):
        assert result.code == 1 and "invalid agent id" in result.err and result.out == ""
        assert "Traceback" not in result.err


GONE = "is gone: it was removed or moved after it was opened"


def test_a_repository_removed_under_the_server_is_said_to_be_gone(repo, tmp_path):
    """Removed (or moved) while the server runs, the repository made every call an `internal` error ("status
    failed: FileNotFoundError"), and a wait under way ran to its timeout as if nothing were wrong."""
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            await call(session, "register_agent")
            assert (await call(session, "status"))["lanes"]
            errors = {}

            async def wait():
                started = anyio.current_time()
                errors["wait"] = await fails(session, "wait_for_unblock", timeout_s=60)
                errors["waited"] = anyio.current_time() - started

            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await anyio.sleep(1)
                repo.rename(tmp_path / "moved")
            for tool, arguments in (("status", {}), ("list_tasks", {}), ("create_task", {"title": "t"}),
                                    ("post_board", {"text": "hi"}), ("commit", {"prompt": "p", "lane": "main"})):
                errors[tool] = await fails(session, tool, **arguments)
            return errors

    errors = anyio.run(scenario)
    assert errors.pop("waited") < 50  # woken by the refs going, not by its timeout
    for tool, error in errors.items():
        assert error == {"code": "repository_gone", "reason": "repository_gone", "exit_code": 1,
                         "message": f"the repository {repo} {GONE}",
                         "hint": "open it again where it is now (a server holding it open must be restarted "
                                 "there)"}, tool
