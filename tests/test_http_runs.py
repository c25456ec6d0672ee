"""Runs on the dashboard: a run driven through the real hooks shows its phase, budget bars, blocked calls
and cost; a run whose agent ended its turn waits for a person and is marked as needing input."""

from __future__ import annotations

import pytest
from conftest import run_cli
from hook_helpers import bash, claude, decision, hook, lane, write
from http_helpers import Server
from test_dashboard import CHROMIUM, WAIT_MS, browser, page  # noqa: F401  (fixtures)


def drive_a_turn(ws):
    """Start a run, submit a prompt, have one call admitted and one blocked, and end the turn."""
    started = run_cli("run", "start", "--agent", "coder-1", "--goal", "Add a greeting", "--phase", "execute",
                      cwd=ws)
    env = {"GIT_LANES_RUN": started.out.strip()}
    assert hook("claude", "UserPromptSubmit", claude("UserPromptSubmit", ws, prompt="Add a greeting"),
                env=env).code == 0
    assert decision(hook("claude", "PreToolUse", bash(ws, "ls", "toolu_1"), env=env))[0] == "allow"
    assert hook("claude", "PostToolUse", done(ws, "ls", "toolu_1"), env=env).code == 0
    assert decision(hook("claude", "PreToolUse", bash(ws, "rm -rf /", "toolu_2"), env=env))[0] == "deny"
    return started.out.strip(), env


def done(ws, command: str, tool_use_id: str) -> dict:
    return claude("PostToolUse", ws, tool_name="Bash", tool_input={"command": command}, tool_use_id=tool_use_id,
                  tool_response={"stdout": "", "stderr": "", "interrupted": False}, duration_ms=12)


def test_a_run_waiting_for_a_person_and_its_budgets(api, repo):
    ws = lane(repo)
    run, env = drive_a_turn(ws)
    [row] = api.run_list(budgets=True)
    assert row["id"] == run and row["budget"]["execute"]["spent"] > 0 and row["blocked"] == 1
    assert decision(hook("claude", "PreToolUse", bash(ws, "git status", "toolu_3"), env=env))[0] == "allow"
    [row] = api.run_list()
    assert [c["id"] for c in row["in_flight"]] == ["toolu_3"] and row["awaiting_input"] is False  # working
    assert hook("claude", "PostToolUse", done(ws, "git status", "toolu_3"), env=env).code == 0
    stop = claude("Stop", ws, stop_hook_active=False, last_assistant_message="Done.")
    assert hook("claude", "Stop", stop, env=env).code == 0
    assert api.run_list()[0]["awaiting_input"] is True
    assert "budget" not in api.run_list()[0]
    hook("claude", "UserPromptSubmit", claude("UserPromptSubmit", ws, prompt="Now test it"), env=env)
    assert api.run_list()[0]["awaiting_input"] is False
    with Server(repo) as server:
        assert server.get("/api/v1/runs?budgets=true").json[0]["budget"]["execute"]["spent"] > 0
        assert server.get("/api/v1/runs").json == run_cli("run", "list", "--json", cwd=repo).json
        assert server.get(f"/api/v1/runs/{run[:6]}").json["id"] == run
        assert server.get("/api/v1/runs/ffffff").json["error"] == "unknown_run"


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (apt-get install -y chromium)")
def test_the_dashboard_shows_runs_and_the_one_waiting_for_input(api, repo, page):  # noqa: F811
    ws = lane(repo)
    run, env = drive_a_turn(ws)
    api.agent_register("coder-1", lane="feature")
    assert hook("claude", "Stop", claude("Stop", ws, stop_hook_active=False), env=env).code == 0
    with Server(repo) as server:
        page.goto(server.url + "/")
        row = page.locator(f'tr[data-run="{run}"]')
        row.wait_for(timeout=WAIT_MS)
        assert "needs" in row.get_attribute("class")
        assert row.locator(".budget").count() >= 4  # one bar per phase of the default policy
        assert row.locator("td.alert").inner_text() == "1"  # the blocked call
        assert page.locator('[data-agent="coder-1"] .chip.needs').inner_text() == "needs input"
    assert page.problems == []


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (apt-get install -y chromium)")
def test_a_call_a_dead_session_left_unfinished_is_shown_as_interrupted(api, repo, page):  # noqa: F811
    """A session that died inside a Write left the call unfinished, and `run show` lists it under
    "interrupted (previous session)"; the dashboard's runs said nothing of it, as if the run were clean."""
    ws = lane(repo)
    run = run_cli("run", "start", "--agent", "coder-1", "--goal", "Add a greeting", "--phase", "execute",
                  cwd=ws).out.strip()
    env = {"GIT_LANES_RUN": run}
    assert hook("claude", "SessionStart", claude("SessionStart", ws, source="startup"), env=env).code == 0
    target = ws / "greet.py"
    assert decision(hook("claude", "PreToolUse", write(ws, target, "toolu_01KILLED"), env=env))[0] == "allow"
    assert hook("claude", "SessionStart", claude("SessionStart", ws, "sess-2", source="resume"), env=env).code == 0
    [row] = api.run_list()
    assert [c["id"] for c in row["interrupted"]] == ["toolu_01KILLED"] and row["in_flight"] == []
    with Server(repo) as server:
        page.goto(server.url + "/")
        call = page.locator(f'tr[data-run="{run}"] .interrupted')
        call.wait_for(timeout=WAIT_MS)
        assert call.inner_text() == "interrupted Write"
        assert str(target) in call.get_attribute("title")
    assert page.problems == []


def test_run_stats_names_its_groups_in_the_api_words(repo):
    """`by` is a query parameter here, not the CLI's --by: the document lists its values, and a wrong one is
    refused naming the parameter the request gave."""
    with Server(repo) as server:
        [operation] = [o["get"] for p, o in server.get("/api/openapi.json").json["paths"].items()
                       if p.endswith("/runs/stats")]
        by = next(p for p in operation["parameters"] if p["name"] == "by")
        assert by["schema"]["enum"] == ["agent", "lane", "run", "task", "day"]
        for group in by["schema"]["enum"]:
            assert server.get(f"/api/v1/runs/stats?by={group}").json["by"] == group
        refused = server.get("/api/v1/runs/stats?by=model")
        assert refused.status == 400 and "--by" not in refused.json["message"], refused.json
        assert "agent, lane, run, task, day" in refused.json["message"]
        # `since` as the CLI's --since takes it (it took only YYYY-MM-DD): a moment with its offset, its UTC day
        assert server.get("/api/v1/runs/stats?since=2026-12-01T01:00%2B02:00").json["since"] == "2026-11-30"
        bad = server.get("/api/v1/runs/stats?since=soonish")
        assert (bad.status, bad.json["error"]) == (400, "invalid_date"), bad.json
