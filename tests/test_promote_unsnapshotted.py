"""`promote` and `task done` take a lane's snapshots only. Edits in its workspace that no state holds stay
there, neither included nor discarded; they used to be left behind in silence, so the user took their latest
edits for promoted. Every face now says so: a `warning:` line on stderr naming how many paths and the command
that snapshots them, an `unsnapshotted` field in `--json`, MCP results and SDK records, a LanesWarning in the
SDK."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import anyio
from conftest import run_cli, workspace
from mcp_helpers import mcp_session

from git_lanes import AgentSession, LanesWarning
from git_lanes.api import Lanes

SNAPSHOT = "`git lanes commit -w feature/a -m PROMPT --auto-accept`"


def _lane_with_edits_beyond_its_snapshot(repo: Path) -> Path:
    """feature/a with a.txt accepted, then edited again and b.txt added, neither snapshotted."""
    api = Lanes(repo)
    api.lane_create("feature/a")
    ws = workspace(repo, "feature/a")
    (ws / "a.txt").write_text("snapshotted\n")
    api.commit("add a", "coder-1", cwd=ws, auto_accept=True)
    (ws / "a.txt").write_text("snapshotted\nedited since\n")
    (ws / "b.txt").write_text("never snapshotted\n")
    assert sorted(api.lane_show("feature/a")["dirty"]) == ["a.txt", "b.txt"]  # what `status` counts
    return ws


def test_promote_warns_of_the_edits_it_left_in_the_workspace_and_keeps_them(repo: Path):
    ws = _lane_with_edits_beyond_its_snapshot(repo)
    result = run_cli("promote", "feature/a", "--auto-accept", cwd=repo)
    assert result.code == 0, result.err
    assert "promoted feature/a into main" in result.out
    assert ("warning: feature/a's workspace has 2 unsnapshotted paths (a.txt, b.txt), not promoted (a promotion "
            f"takes the lane's snapshots only): snapshot them with {SNAPSHOT}, then promote again: "
            "`git lanes promote feature/a --auto-accept`") in result.err
    # the snapshot went in, the edits did not; they are still in the workspace
    assert (repo / "a.txt").read_text() == "snapshotted\n" and not (repo / "b.txt").exists()
    assert (ws / "a.txt").read_text() == "snapshotted\nedited since\n" and (ws / "b.txt").exists()


def test_promote_json_carries_the_edits_left_behind_up_to_date_and_dry_run_too(repo: Path):
    ws = _lane_with_edits_beyond_its_snapshot(repo)
    expected = {"lane": "feature/a", "workspace": str(ws), "count": 2, "paths": ["a.txt", "b.txt"],
                "hint": f"snapshot them with {SNAPSHOT}, then promote again: `git lanes promote feature/a`"}
    dry = run_cli("promote", "feature/a", "--dry-run", "--json", cwd=repo)
    assert dry.code == 0 and dry.json["unsnapshotted"] == expected, dry.out
    done = run_cli("promote", "feature/a", "--json", "--auto-accept", cwd=repo)
    assert done.code == 0 and done.json["status"] == "accepted"
    assert done.json["unsnapshotted"]["paths"] == ["a.txt", "b.txt"] and "warning:" in done.err
    again = run_cli("promote", "feature/a", "--json", cwd=repo)
    assert again.json["status"] == "up_to_date" and again.json["unsnapshotted"]["count"] == 2
    assert "warning: feature/a's workspace has 2 unsnapshotted paths" in again.err


def test_a_workspace_with_nothing_unsnapshotted_promotes_without_a_warning(repo: Path):
    api = Lanes(repo)
    api.lane_create("feature/a")
    ws = workspace(repo, "feature/a")
    (ws / "a.txt").write_text("a\n")
    api.commit("add a", "coder-1", cwd=ws, auto_accept=True)
    result = run_cli("promote", "feature/a", "--auto-accept", "--json", cwd=repo)
    assert result.code == 0 and result.json["unsnapshotted"] is None and result.err == ""


def test_task_done_warns_of_the_edits_its_integration_left_in_the_workspace(repo: Path):
    api = Lanes(repo)
    api.agent_register("coder-1")
    task = api.task_create("Add a", actor="lead")["task"]
    _lane_with_edits_beyond_its_snapshot(repo)
    api.task_claim(task, "coder-1", lane="feature/a")
    result = run_cli("task", "done", task[:8], "--agent", "coder-1", "--json", cwd=repo)
    assert result.code == 0, result.err
    left = result.json["integrated"]["unsnapshotted"]
    assert left["count"] == 2 and left["paths"] == ["a.txt", "b.txt"] and SNAPSHOT in left["hint"]
    assert "warning: feature/a's workspace has 2 unsnapshotted paths (a.txt, b.txt)" in result.err
    assert SNAPSHOT in result.err


def test_mcp_promote_carries_the_edits_left_behind_in_its_own_words(repo: Path):
    _lane_with_edits_beyond_its_snapshot(repo)
    assert run_cli("agent", "register", "coder-1", cwd=repo).code == 0  # its first call says nothing of that

    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            return await session.call_tool("promote", {"lane": "feature/a", "auto_accept": True})

    result = anyio.run(scenario)
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    commit = '`commit(lane="feature/a", prompt=PROMPT, auto_accept=true)`'
    assert data["unsnapshotted"]["count"] == 2 and commit in data["unsnapshotted"]["hint"], data
    assert len(data["warnings"]) == 1 and "2 unsnapshotted paths" in data["warnings"][0]
    assert commit in data["warnings"][0] and "git lanes" not in data["warnings"][0]
    assert json.loads(result.content[0].text)["unsnapshotted"]["paths"] == ["a.txt", "b.txt"]


def test_the_sdk_warns_of_the_edits_left_behind_at_the_callers_line(repo: Path):
    _lane_with_edits_beyond_its_snapshot(repo)
    assert run_cli("agent", "register", "coder-1", cwd=repo).code == 0  # its first call says nothing of that
    session = AgentSession(repo, agent_id="coder-1", lane="feature/a")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        promoted = session.api.promote("feature/a", auto_accept=True)
    assert promoted.unsnapshotted is not None and promoted.unsnapshotted.count == 2
    ours = [w for w in caught if issubclass(w.category, LanesWarning)]
    assert len(ours) == 1 and "2 unsnapshotted paths" in str(ours[0].message), [str(w.message) for w in caught]
    assert '`session.api.commit(PROMPT, session.agent_id, lane="feature/a", auto_accept=True)`' in str(ours[0].message)
    assert ours[0].filename == __file__


def test_what_a_direct_api_call_left_on_the_thread_is_not_told_by_a_later_sdk_call(repo: Path):
    """The `Lanes` API called directly has no face to take its notices: a later SDK call must not tell them as
    its own."""
    _lane_with_edits_beyond_its_snapshot(repo)
    Lanes(repo).promote("feature/a", auto_accept=True)  # its notice stays on this thread
    session = AgentSession(repo, agent_id="coder-1", lane="feature/b")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.api.status()
    assert not [w for w in caught if issubclass(w.category, LanesWarning)]
