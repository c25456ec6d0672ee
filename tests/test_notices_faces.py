"""The notices an operation gives about a problem it went on past (a lost operation log head it starts
afresh, errors.notice) reach the user of every long-lived face as the CLI's `warning:` lines do: `warnings`
in an MCP result, an `X-Lanes-Warnings` header in REST, a LanesWarning in the SDK. Each is told once, to the
call that gave it, and none waits in the process for a later call or another thread."""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

import anyio
import pytest
from conftest import git, run_cli, workspace
from http_helpers import Server
from mcp_helpers import mcp_session
from test_oplog_broken import OPLOG, STARTS_AFRESH, _create, _drop_object

from git_lanes import AgentSession, LanesWarning
from git_lanes.errors import notice, take_notices


def _lose_log_head(repo: Path) -> str:
    # the agent the tests act as is known: its first call would give a notice of its own (test_first_seen_agents)
    assert run_cli("agent", "register", "coder-1", cwd=repo).code == 0
    _create(repo, "feature/a")
    lost = git("rev-parse", OPLOG, cwd=repo).strip()
    _drop_object(repo, lost)
    return f"{OPLOG} named commit {lost[:8]}, which is not in the repository: {STARTS_AFRESH}"


def _lose_log_head_before_a_failing_gate(repo: Path) -> str:
    """A lane with an edit the trunk's required gate will reject, then the log's head lost: committing it
    with auto-accept records the rejection (starting the log afresh, the notice) and then fails."""
    (repo / ".lanes.toml").write_text('[[gate]]\nname = "no"\ncommand = "exit 1"\n')
    declared = run_cli("commit", "-m", "declare gates", "--agent", "lead", "--json", cwd=repo)
    assert run_cli("accept", declared.json["id"], cwd=repo).code == 0
    _create(repo, "feature/g")
    (workspace(repo, "feature/g") / "g.txt").write_text("g\n")
    return _lose_log_head(repo)


def test_notices_are_per_thread_and_taken_once():
    take_notices()  # what an earlier test's calls of the API itself (no face takes them) left on this thread
    notice("mine")
    seen: list[list[str]] = []
    other = threading.Thread(target=lambda: seen.append(take_notices()))
    other.start()
    other.join()
    assert seen == [[]]  # another thread (another caller of a long-lived face) never gets this one's
    assert take_notices() == ["mine"]
    assert take_notices() == []


def test_notices_nobody_takes_keep_only_the_newest():
    from git_lanes.errors import NOTICES_KEPT

    take_notices()
    for number in range(NOTICES_KEPT + 5):
        notice(f"notice {number}")
    kept = take_notices()
    assert len(kept) == NOTICES_KEPT and kept[-1] == f"notice {NOTICES_KEPT + 4}" and kept[0] == "notice 5"


def test_mcp_results_carry_the_notices_of_their_own_call(repo: Path):
    expected = _lose_log_head(repo)

    async def scenario() -> tuple:
        async with mcp_session(repo, "--agent", "coder-1") as session:
            first = await session.call_tool("assign_worktree", {"lane": "feature/b"})
            second = await session.call_tool("assign_worktree", {"lane": "feature/c"})
            return first, second

    first, second = anyio.run(scenario)
    assert not first.is_error, first.content[0].text
    assert first.structured_content["warnings"] == [expected]
    assert [c.text for c in first.content[1:]] == [f"warning: {expected}"]  # seen by a client reading text
    assert "warnings" not in json.loads(first.content[0].text)  # the text stays the CLI's --json
    assert not second.is_error and "warnings" not in second.structured_content and len(second.content) == 1


def test_a_failed_mcp_call_carries_the_notices_it_went_on_past_before_failing(repo: Path):
    expected = _lose_log_head_before_a_failing_gate(repo)

    async def scenario() -> tuple:
        async with mcp_session(repo, "--agent", "coder-1") as session:
            failed = await session.call_tool("commit", {"prompt": "Add g", "lane": "feature/g", "auto_accept": True})
            again = await session.call_tool("status", {})
            return failed, again

    failed, again = anyio.run(scenario)
    assert failed.is_error, failed.content[0].text
    payload = json.loads(failed.content[0].text)
    assert payload["error"]["code"] == "gate_failed" and payload["warnings"] == [expected]
    assert payload == failed.structured_content
    assert not again.is_error and "warnings" not in again.structured_content  # told once, to the failed call


def test_a_failed_rest_request_carries_the_notices_it_went_on_past_before_failing(repo: Path):
    expected = _lose_log_head_before_a_failing_gate(repo)
    with Server(repo) as server:
        failed = server.post("/api/v1/lanes/feature%2Fg/commit", {"prompt": "Add g", "agent_id": "coder-1",
                                                                  "auto_accept": True})
        again = server.get("/api/v1/lanes")
    assert (failed.status, failed.json["error"]) == (422, "gate_failed"), failed.body
    headers = {key.lower(): value for key, value in failed.headers.items()}
    assert json.loads(headers["x-lanes-warnings"]) == [expected]
    assert again.status == 200 and "x-lanes-warnings" not in {key.lower() for key in again.headers}


def test_rest_answers_carry_the_notices_of_their_own_request(repo: Path):
    expected = _lose_log_head(repo)
    with Server(repo) as server:
        made = server.post("/api/v1/lanes", {"name": "feature/b"})
        again = server.post("/api/v1/lanes", {"name": "feature/c"})
    assert made.status == 200, made.body
    headers = {key.lower(): value for key, value in made.headers.items()}
    assert json.loads(headers["x-lanes-warnings"]) == [expected]
    assert again.status == 200 and "x-lanes-warnings" not in {key.lower() for key in again.headers}


def test_the_sdk_warns_once_at_the_callers_line(repo: Path):
    expected = _lose_log_head(repo)
    session = AgentSession(repo, agent_id="coder-1", lane="feature/b")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.workspace()
        session.heartbeat()
    # only ours: "always" also records a ResourceWarning for a file an earlier test in this process left to
    # the garbage collector, whenever the collector happens to run inside this block
    ours = [w for w in caught if issubclass(w.category, LanesWarning)]
    assert [(w.category, str(w.message)) for w in ours] == [(LanesWarning, expected)]
    assert ours[0].filename == __file__
    assert take_notices() == []
