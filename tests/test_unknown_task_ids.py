"""A task id that names no task gets one answer whether it is whole or a prefix: `no task matches '…'`, code
`unknown_task`, the same hint, on every face (the CLI, MCP and REST all carry the domain's error). A whole id
once read `no task '…'` (the fold's lookup) where a prefix read `no task matches '…'`."""

from __future__ import annotations

import anyio
import pytest
from conftest import run_cli
from mcp_helpers import fails, mcp_session

WHOLE = "0123456789abcdef"  # a whole task id: 16 hex digits
IDS = [WHOLE, WHOLE[:8], WHOLE + "0123456789abcdef01234567"]
HINT = "see `git lanes task list`"


@pytest.mark.parametrize("task", IDS)
@pytest.mark.parametrize("command", [("task", "claim", "--agent", "coder-1"), ("task", "show"),
                                     ("task", "done", "--agent", "coder-1")])
def test_an_unknown_task_id_whole_or_prefix_is_worded_alike(repo, task, command):
    args = (*command[:2], task, *command[2:])
    text = run_cli(*args, cwd=repo)
    assert text.code == 1 and text.err.splitlines() == [f"git-lanes: error: no task matches '{task}'",
                                                         f"hint: {HINT}"], text.err
    as_json = run_cli(*args, "--json", cwd=repo)
    assert as_json.code == 1 and (as_json.json["error"], as_json.json["message"], as_json.json["hint"]) == (
        "unknown_task", f"no task matches '{task}'", HINT)


def test_mcp_words_an_unknown_whole_task_id_as_the_cli_does(repo):
    async def scenario():
        async with mcp_session(repo) as session:
            return (await fails(session, "claim_task", task_id=WHOLE, agent_id="coder-1"),
                    await fails(session, "get_task", task_id=WHOLE[:8]))

    claimed, shown = anyio.run(scenario)
    for refused, task in ((claimed, WHOLE), (shown, WHOLE[:8])):
        assert (refused["reason"], refused["message"], refused["hint"]) == (
            "unknown_task", f"no task matches '{task}'", "see `list_tasks`"), refused  # HINT in the MCP's words


@pytest.mark.parametrize("ticket", ["", " ", "zzzz"])
def test_task_create_with_a_ticket_that_names_none_is_refused_and_writes_nothing(repo, ticket):
    """`task create T --ticket "$TICKET"` with TICKET unset made a task in no ticket, where `--depends ""`
    and `ticket show ""` are refused: an id given is judged as given."""
    from conftest import git

    before = git("for-each-ref", cwd=repo)
    result = run_cli("task", "create", "t", "--ticket", ticket, "--json", cwd=repo)
    assert result.code == 1 and result.json["error"] == "unknown_ticket", result.err
    assert git("for-each-ref", cwd=repo) == before
