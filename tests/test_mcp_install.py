"""`git lanes install claude|codex|gemini` adds the `lanes` MCP server entry beside the hooks, as carefully as
the hooks: nothing else in the file changes, twice is once, uninstall removes exactly it, a foreign `lanes`
entry and an unreadable file are left alone; and the entry it writes starts a working server."""

from __future__ import annotations

import json
import os

import anyio
import pytest
from conftest import run_cli
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_helpers import call

from git_lanes.model.config import tomllib  # tomli: TOML 1.1, as git-lanes reads it

MCP_FILES = {"claude": ".mcp.json", "codex": ".codex/config.toml", "gemini": ".gemini/settings.json"}
OTHER_SERVER = {"command": "npx", "args": ["-y", "some-server"]}
CODEX_BEFORE = '# my settings\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "some-server"]\n'


def read(path):
    return tomllib.loads(path.read_text()) if path.suffix == ".toml" else json.loads(path.read_text())


def servers(path) -> dict:
    data = read(path)
    return data.get("mcp_servers" if path.suffix == ".toml" else "mcpServers", {})


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_install_adds_the_server_beside_what_is_there_and_uninstall_removes_only_it(repo, cli):
    path = repo / MCP_FILES[cli]
    path.parent.mkdir(exist_ok=True)
    before = CODEX_BEFORE if cli == "codex" else json.dumps({"theme": "dark", "mcpServers": {"docs": OTHER_SERVER}})
    path.write_text(before)
    first = run_cli("install", cli, "--json", cwd=repo)
    assert first.code == 0 and first.json["mcp"]["changed"], first.err
    entry = servers(path)["lanes"]
    assert entry["args"][-1] == "mcp"
    assert servers(path)["docs"] == OTHER_SERVER
    if cli == "codex":
        assert path.read_text().startswith(CODEX_BEFORE.rstrip("\n"))  # comments and layout kept
        assert entry["env_vars"] == ["GIT_LANES_AGENT"] and entry["tool_timeout_sec"] >= 600
    installed = path.read_text()
    again = run_cli("install", cli, "--json", cwd=repo)
    assert again.json["mcp"]["changed"] is False and path.read_text() == installed
    removed = run_cli("uninstall", cli, "--json", cwd=repo)
    assert removed.code == 0 and removed.json["mcp"]["changed"]
    if cli == "codex":
        assert read(path) == tomllib.loads(before)
    elif cli == "claude":
        assert json.loads(path.read_text()) == json.loads(before)
    else:  # the hooks share this file, and leave it as it was too
        assert json.loads(path.read_text()) == json.loads(before)


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_foreign_lanes_entry_is_left_alone(repo, cli):
    path = repo / MCP_FILES[cli]
    path.parent.mkdir(exist_ok=True)
    text = '[mcp_servers.lanes]\ncommand = "my-own-lanes"\n' if cli == "codex" else \
        json.dumps({"mcpServers": {"lanes": {"command": "my-own-lanes"}}})
    path.write_text(text)
    result = run_cli("install", cli, cwd=repo)
    assert result.code == 0 and "left as it is" in result.out
    assert run_cli("uninstall", cli, cwd=repo).code == 0
    assert path.read_text() == text


def test_an_unreadable_file_is_never_overwritten_and_no_mcp_leaves_it_out(repo):
    path = repo / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text("[mcp_servers\nbroken")
    result = run_cli("install", "codex", cwd=repo)
    assert result.code == 1 and "not valid TOML" in result.err and path.read_text() == "[mcp_servers\nbroken"
    assert run_cli("install", "claude", "--no-mcp", cwd=repo).code == 0
    assert not (repo / ".mcp.json").exists() and (repo / ".claude" / "settings.json").exists()


def test_the_installed_entry_starts_a_server_as_its_agent(repo):
    assert run_cli("install", "claude", cwd=repo).code == 0
    entry = servers(repo / ".mcp.json")["lanes"]
    env = {**os.environ, "GIT_LANES_AGENT": "claude-7"}  # what Claude Code's ${GIT_LANES_AGENT:-claude} gives
    parameters = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(repo), env=env)

    async def scenario():
        with open(os.devnull, "w") as quiet:
            async with stdio_client(parameters, errlog=quiet) as (read_, write), ClientSession(read_, write) as session:
                await session.initialize()
                return await call(session, "register_agent")

    assert anyio.run(scenario)["agent"] == "claude-7"
