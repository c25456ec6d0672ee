"""The MCP entries in contrib/mcp/ start a working server as the agent they name, the way each agent CLI
reads them (Claude Code expands `${VAR:-default}` in .mcp.json)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_helpers import call

from git_lanes.model.config import tomllib  # tomli: TOML 1.1, as git-lanes reads it

CONTRIB = Path(__file__).resolve().parent.parent / "contrib" / "mcp"


def entry(name: str) -> dict:
    text = (CONTRIB / name).read_text()
    if name.endswith(".toml"):
        return tomllib.loads(text)["mcp_servers"]["lanes"]
    return json.loads(text)["mcpServers"]["lanes"]


def expand(value: str) -> str:
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: os.environ.get(m.group(1), m.group(2) or ""), value)


@pytest.mark.parametrize("name, agent", [("claude.mcp.json", "claude"), ("codex.config.toml", "codex"),
                                         ("gemini.settings.json", "gemini")])
def test_each_entry_starts_a_server_acting_as_its_agent(repo, name, agent):
    spec = entry(name)
    assert spec["command"] == "git" and spec["args"][:2] == ["lanes", "mcp"]
    env = {**os.environ, **{key: expand(value) for key, value in spec.get("env", {}).items()},
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    parameters = StdioServerParameters(command=spec["command"], args=[expand(a) for a in spec["args"]],
                                       cwd=str(repo), env=env)

    async def scenario():
        with open(os.devnull, "w") as quiet:
            async with stdio_client(parameters, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await call(session, "register_agent")

    assert anyio.run(scenario)["agent"] == agent


def test_the_claude_plugin_brings_the_same_server():
    plugin = CONTRIB.parent / "claude-plugin"
    assert json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())["mcpServers"] == "./.mcp.json"
    assert json.loads((plugin / ".mcp.json").read_text()) == json.loads((CONTRIB / "claude.mcp.json").read_text())
