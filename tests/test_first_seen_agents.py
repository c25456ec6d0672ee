"""An agent's first call registers it; `agent register` and `heartbeat` say so in their result, and every other
call (a claim, a post, a task claim, any MCP tool) now says so too, as a notice in each face's own way, once:
a mistyped GIT_LANES_AGENT used to make a second agent in silence, which then held claims and tasks."""

from __future__ import annotations

import warnings
from pathlib import Path

import anyio
from conftest import run_cli
from http_helpers import Server
from mcp_helpers import mcp_session

from git_lanes import AgentSession, LanesWarning
from git_lanes.errors import take_notices

TYPO = "agent 'codr-1' was not known here: this call registered it (did you mean 'coder-1'?)"


def registered(repo: Path) -> None:
    result = run_cli("agent", "register", "coder-1", "--json", cwd=repo)
    assert result.code == 0 and result.err == "", result.err  # registering on purpose: nothing to warn of


def test_the_cli_warns_once_on_stderr_when_a_call_registers_an_agent(repo: Path):
    registered(repo)
    typo = {"GIT_LANES_AGENT": "codr-1"}
    first = run_cli("claim", "add", "src/**", "--json", cwd=repo, env=typo)
    assert first.code == 0 and first.err == f"warning: {TYPO}\n", first.err
    assert first.json["agent"] == "codr-1" and "new_agents" not in first.json  # stdout stays the record
    again = run_cli("board", "post", "hello", "--json", cwd=repo, env=typo)
    assert again.code == 0 and again.err == "", again.err
    newcomer = run_cli("board", "post", "hi", "--agent", "reviewer", cwd=repo)
    assert newcomer.err == "warning: agent 'reviewer' was not known here: this call registered it\n"
    # heartbeat says so in its own result, as before: no second telling
    beat = run_cli("agent", "heartbeat", "codr-2", cwd=repo)
    assert beat.code == 0 and beat.err == "" and "registered codr-2 (first call)" in beat.out


def test_mcp_results_and_rest_answers_carry_it(repo: Path):
    registered(repo)

    async def scenario():
        async with mcp_session(repo, "--agent", "codr-1") as session:
            first = await session.call_tool("claim_files", {"globs": ["src/**"]})
            second = await session.call_tool("claim_files", {"globs": ["lib/**"]})
            return first, second

    first, second = anyio.run(scenario)
    assert not first.is_error and first.structured_content["warnings"] == [TYPO], first.content
    assert not second.is_error and "warnings" not in second.structured_content
    with Server(repo) as server:
        posted = server.post("/api/v1/board", {"text": "hi", "agent_id": "coder-2"})
    assert posted.status == 200, posted.body
    headers = {key.lower(): value for key, value in posted.headers.items()}
    assert "'coder-2' was not known here" in headers["x-lanes-warnings"]


def test_the_sdk_warns_at_the_callers_line(repo: Path):
    registered(repo)
    session = AgentSession(repo, agent_id="codr-1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.claim_files("src/**")
        session.post("again")
    ours = [w for w in caught if issubclass(w.category, LanesWarning)]
    assert [str(w.message) for w in ours] == [TYPO] and ours[0].filename == __file__
    assert take_notices() == []
