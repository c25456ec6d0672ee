"""A claim of a task whose dependencies are not done takes it ahead of them, as the ledger issue's wake-up
needs (finishing a task wakes the owners of the tasks it makes ready), and says so (`ready` false); asked
for ready tasks only (`--ready-only`, `ahead=False`), the fold refuses it in one line naming them (exit 1,
`task_not_ready`), so the CLI, MCP, the SDK and REST all decide alike. Ops recorded before the rule (no
`ahead` in their args) fold exactly as they did: a replay (sync) decides the same for them."""

from __future__ import annotations

import anyio
import pytest
from conftest import run_cli
from mcp_helpers import call, fails, mcp_session

from git_lanes import AgentSession, UserError
from git_lanes.domain.coordination import FOLD
from git_lanes.ledger import Op, State
from git_lanes.model.ledger_delta import Materialized


@pytest.fixture
def blocked(api):
    """(upstream, downstream): the second depends on the first, which is open."""
    api.agent_register("coder-1")
    api.agent_register("coder-2")
    upstream = api.task_create("Write schema").task
    downstream = api.task_create("Write API", depends=(upstream,)).task
    return upstream, downstream


def test_the_cli_asked_for_ready_only_refuses_a_task_not_ready_and_names_what_it_waits_on(api, repo, blocked):
    upstream, downstream = blocked
    refused = run_cli("task", "claim", downstream[:8], "--agent", "coder-2", "--ready-only", "--json", cwd=repo)
    assert (refused.code, refused.json["error"]) == (1, "task_not_ready"), refused.err
    assert refused.json["waiting_on"] == [upstream]
    line = refused.err.splitlines()[0]
    assert line.startswith(f"git-lanes: error: task {downstream[:8]} is not ready") and upstream[:8] in line
    assert "Write schema" in line and "open" in line
    assert "--ahead" in refused.err  # the way to claim it anyway, in the CLI's words
    shown = api.task_show(downstream)
    assert (shown.owner, shown.status, shown.version) == (None, "open", 1)  # nothing changed


def test_a_claim_of_a_task_not_ready_takes_it_ahead_says_so_and_wakes_the_owner(api, repo, blocked):
    """The ledger issue's flow, as it names the command: `task claim ID --agent A` of a task that waits."""
    upstream, downstream = blocked
    said = run_cli("task", "claim", downstream[:8], "--agent", "coder-2", cwd=repo)
    assert said.code == 0 and "not ready yet" in said.out, said.err
    ahead = run_cli("task", "claim", downstream[:8], "--agent", "coder-2", "--ahead", "--json", cwd=repo)
    assert ahead.code == 0 and (ahead.json["owner"], ahead.json["ready"]) == ("coder-2", False), ahead.err
    api.task_claim(upstream, "coder-1")
    done = run_cli("task", "done", upstream[:8], "--agent", "coder-1", "--json", cwd=repo)
    assert done.json["woken"] == [{"agent": "coder-2", "task": downstream}]
    # an owner claiming its own task again (a renewal) is never refused, ready or not
    assert run_cli("task", "claim", downstream[:8], "--agent", "coder-2", cwd=repo).code == 0


def test_a_claim_once_the_dependencies_are_done_needs_nothing_more(api, repo, blocked):
    upstream, downstream = blocked
    api.task_claim(upstream, "coder-1")
    api.task_done(upstream, actor="coder-1")
    assert run_cli("task", "claim", downstream[:8], "--agent", "coder-2", cwd=repo).code == 0


def test_the_sdk_and_mcp_decide_it_alike(api, repo, blocked):
    _, downstream = blocked
    with pytest.raises(UserError) as raised:
        AgentSession(repo, agent_id="coder-2").claim_task(downstream, ahead=False)
    assert raised.value.code == "task_not_ready"

    async def scenario():
        async with mcp_session(repo) as session:
            error = await fails(session, "claim_task", task_id=downstream, agent_id="coder-4", ahead=False)
            assert (error["reason"], error["exit_code"]) == ("task_not_ready", 1)
            assert "ahead" in error["hint"]
            taken = await call(session, "claim_task", task_id=downstream, agent_id="coder-3")
            assert (taken["owner"], taken["ready"]) == ("coder-3", False)

    anyio.run(scenario)
    assert AgentSession(repo, agent_id="coder-3").claim_task(downstream).already is True


def test_an_op_recorded_before_the_rule_folds_as_it_did():
    """A peer's claim of a blocked task, made before this rule (its args have no `ahead`), replays as the
    claim it was; the same claim made now is refused."""
    overlay: dict = {}

    def fold(n: int, kind: str, args: dict) -> dict:
        nonlocal overlay
        op = Op(f"{n:016x}", kind, "lead", 1_800_000_000.0 + n, args)
        edits, result = FOLD.apply(State(None, at=Materialized(None, overlay, n)), op)  # type: ignore[arg-type]
        overlay = {**overlay, **edits}
        return result

    fold(1, "agent.register", {"agent": "coder-2"})
    upstream = f"{2:016x}"
    fold(2, "task.create", {"title": "first"})
    fold(3, "task.create", {"title": "second", "depends": [upstream]})
    with pytest.raises(UserError) as raised:
        fold(4, "task.claim", {"task": f"{3:016x}", "agent": "coder-2", "version": None, "lane": None,
                               "ahead": False})
    assert raised.value.code == "task_not_ready"
    old = fold(5, "task.claim", {"task": f"{3:016x}", "agent": "coder-2", "version": None, "lane": None})
    assert (old["owner"], old["ready"]) == ("coder-2", False)


def test_the_rest_api_decides_it_alike(api, repo, blocked):
    from http_helpers import Server

    _, downstream = blocked
    with Server(repo) as server:
        refused = server.post(f"/api/v1/tasks/{downstream[:8]}/claim", {"agent_id": "coder-2", "ahead": False})
        assert (refused.status, refused.json["error"]) == (400, "task_not_ready"), refused.json
        taken = server.post(f"/api/v1/tasks/{downstream[:8]}/claim", {"agent_id": "coder-2"})
        assert taken.status == 200 and taken.json["owner"] == "coder-2", taken.json
