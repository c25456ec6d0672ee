"""Driving `git lanes mcp` the way an agent CLI does: a real server process spoken to by the MCP SDK's own
client (`stdio_client` + `ClientSession`)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def server_parameters(repo: Path, *args: str, env: dict | None = None) -> StdioServerParameters:
    # The client passes the server only a safe minimum of the environment; the hermetic test environment
    # (HOME, git config, pinned dates) must reach it whole.
    return StdioServerParameters(command=sys.executable, args=["-m", "git_lanes", "mcp", *args], cwd=str(repo),
                                 env={**os.environ, **(env or {})})


@asynccontextmanager
async def mcp_session(repo: Path, *args: str, env: dict | None = None) -> AsyncIterator[ClientSession]:
    """An initialized client session with a fresh `git lanes mcp ARGS` server in `repo`."""
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server_parameters(repo, *args, env=env), errlog=quiet) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """Call a tool that must succeed; returns its structured content (a list result unwrapped)."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content[0].text}"
    assert result.structured_content is not None
    text = json.loads(result.content[0].text)
    # the notices of the call (an agent's first call registers it, say) ride beside the result, not in the text
    data = {key: value for key, value in result.structured_content.items() if key != "warnings"}
    assert data == (text if isinstance(text, dict) else {"result": text})  # content and structure agree
    return data["result"] if isinstance(text, list) else data


async def fails(session: ClientSession, tool: str, **arguments: Any) -> dict:
    """Call a tool that must fail as a tool error; returns the error object."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.content[0].text}"
    payload = json.loads(result.content[0].text)
    # beside the error, only the notices of what the call went on past (an agent's first call registered it)
    assert payload == result.structured_content and "error" in payload and set(payload) <= {"error", "warnings"}
    assert "Traceback" not in result.content[0].text
    return payload["error"]
