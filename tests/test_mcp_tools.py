"""`git lanes mcp` driven by the MCP SDK's own client in real processes: the tools of each tool set, a whole
Lockage-style lifecycle, results equal to the CLI's `--json`, and bad arguments as tool errors."""

from __future__ import annotations

import anyio
import pytest
from conftest import run_cli, workspace
from mcp_helpers import call, fails, mcp_session

CORE = {
    "register_agent", "heartbeat", "create_task", "list_tasks", "get_task", "claim_task", "add_dependency",
    "task_done", "block_task", "resume_task", "handoff_task", "open_ticket", "link_task_to_ticket", "list_tickets",
    "assign_worktree", "list_worktrees", "release_worktree", "claim_files", "release_files", "list_claims",
    "publish_dirty", "list_dirty", "post_board", "read_board", "resolve_question", "answer_question",
    "wait_for_unblock",
    "commit", "propose", "accept", "reject", "history", "show", "diff", "status", "promote", "restore",
    "lane_env", "dispatch_status", "op_log",
}
MAINTENANCE = {"reclaim_orphan_worktrees", "process_merge_queue", "gc", "dispatch", "undo"}
PUBLISHER = {"publisher_status", "publish_ticket", "acquire_publish_lock", "release_publish_lock",
             "close_ticket_on_merge", "clear_integration_branch", "release_ticket_claims"}


@pytest.mark.parametrize("args, env, expected", [
    ((), {}, CORE),
    (("--toolsets", "core,maintenance"), {}, CORE | MAINTENANCE),
    (("--toolsets", "publisher"), {}, CORE | PUBLISHER),
    ((), {"GIT_LANES_TOOLSETS": "maintenance"}, CORE | MAINTENANCE),
])
def test_each_tool_set_lists_its_tools(repo, args, env, expected):
    async def scenario():
        async with mcp_session(repo, *args, env=env) as session:
            return (await session.list_tools()).tools

    tools = anyio.run(scenario)
    assert {t.name for t in tools} == expected
    for tool in tools:
        assert len(tool.description or "") > 30, tool.name
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"


def test_an_unknown_tool_set_is_a_usage_error(repo):
    result = run_cli("mcp", "--toolsets", "core,bogus", cwd=repo)
    assert result.code == 2 and "unknown tool set bogus" in result.err


def test_outside_a_lanes_repository_the_server_says_so_and_exits_1(tmp_path):
    result = run_cli("mcp", cwd=tmp_path)
    assert result.code == 1 and "not a git repository" in result.err and result.out == ""


def test_a_lockage_lifecycle_from_ticket_to_the_dependent_owner_waking(repo):
    """open_ticket -> create_task with a dependency -> claim_task -> assign_worktree -> claim_files -> write
    -> commit -> task_done, while the dependent task's owner waits in wait_for_unblock on another server."""
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as one, mcp_session(repo, "--agent", "coder-2") as two:
            ticket = (await call(one, "open_ticket", title="Login flow"))["ticket"]
            first = await call(one, "create_task", title="Session store", ticket_id=ticket[:6], files=["src/auth/**"])
            second = await call(one, "create_task", title="Login form", depends=[first["task"]], ticket_id=ticket)
            assert second["ready"] is False
            assert (await call(two, "claim_task", task_id=second["task"], ahead=True))["ready"] is False
            ready = await call(one, "list_tasks", ready_only=True)
            assert [t["id"] for t in ready] == [first["task"]]

            progress = anyio.Event()
            woke: dict = {}

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.set()

            async def wait_for_it() -> None:
                result = await two.call_tool("wait_for_unblock", {"timeout_s": 120}, progress_callback=on_progress)
                woke.update(result.structured_content)

            async with anyio.create_task_group() as group:
                group.start_soon(wait_for_it)
                await progress.wait()  # the waiter is waiting before the work below begins
                claimed = await call(one, "claim_task", task_id=first["task"][:8], version=first["version"])
                assert claimed["owner"] == "coder-1" and claimed["version"] == 2
                worktree = await call(one, "assign_worktree")
                assert worktree["lane"] == "agent/coder-1" and worktree["created"]
                claim = await call(one, "claim_files", globs=["src/auth/**", "docs/auth.md"])
                assert claim["agent"] == "coder-1"
                workspace = anyio.Path(worktree["workspace"])
                await (workspace / "src" / "auth").mkdir(parents=True)
                await (workspace / "src" / "auth" / "session.py").write_text("SESSIONS = {}\n")
                snapshot = await call(one, "commit", prompt="Add the session store", tags=["auth"], tokens_in=1200,
                                      tokens_out=800, cost_usd=0.02, auto_accept=True)
                assert snapshot["status"] == "accepted" and snapshot["lane"] == "agent/coder-1"
                assert snapshot["intent"]["agent_id"] == "coder-1" and snapshot["cost"]["tokens_in"] == 1200
                done = await call(one, "task_done", task_id=first["task"])
                assert done["now_ready"] == [second["task"]]
            assert woke["reason"] == "task_ready"
            assert [w["task"] for w in woke["wakes"]] == [second["task"]]
            dirty = await call(one, "publish_dirty")
            assert dirty["files"] == []  # everything was committed
            return ticket, first["task"]

    ticket, task = anyio.run(scenario)
    shown = run_cli("task", "show", task, "--json", cwd=repo).json
    assert shown["status"] == "done" and shown["ticket"] == ticket
    assert run_cli("lane", "show", "agent/coder-1", "--json", cwd=repo).json["head"] == \
        run_cli("history", "--lane", "agent/coder-1", "--json", cwd=repo).json["transitions"][0]["to"]


def test_read_tools_return_exactly_what_the_cli_json_prints(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            task = (await call(session, "create_task", title="Docs", files=["docs/**"]))["task"]
            await call(session, "claim_task", task_id=task)
            await call(session, "open_ticket", title="Docs ticket")
            await call(session, "post_board", text="hello", kind="question")
            return task, {name: await call(session, name, **args) for name, args in [
                ("list_tasks", {}), ("get_task", {"task_id": task}), ("list_tickets", {}), ("list_claims", {}),
                ("history", {}), ("status", {}), ("list_dirty", {}), ("diff", {"a": "main", "b": "main"}),
            ]}

    task, results = anyio.run(scenario)
    cli = {"list_tasks": ["task", "list"], "get_task": ["task", "show", task], "list_tickets": ["ticket", "list"],
           "list_claims": ["claim", "list"], "history": ["history"], "status": ["status"],
           "list_dirty": ["dirty", "list"], "diff": ["diff", "main", "main"]}
    for name, args in cli.items():
        assert results[name] == run_cli(*args, "--json", cwd=repo).json, name


def test_bad_arguments_are_tool_errors_with_the_clis_codes(repo):
    async def scenario():
        async with mcp_session(repo) as session:
            unknown = await fails(session, "get_task", task_id="feedbeef")
            wrong_type = await fails(session, "claim_task", task_id="feedbeef", version="three", agent_id="a")
            missing = await fails(session, "create_task")
            escaping = await fails(session, "claim_files", globs=["../outside/**"], agent_id="a")
            no_agent = await fails(session, "claim_task", task_id="feedbeef")
            bad_agent = await fails(session, "heartbeat", agent_id="no spaces allowed")
            no_lane = await fails(session, "commit", prompt="x", agent_id="a")
            no_tool = await fails(session, "no_such_tool")
            still_serving = await call(session, "list_tasks")
            return unknown, wrong_type, missing, escaping, no_agent, bad_agent, no_lane, no_tool, still_serving

    unknown, wrong_type, missing, escaping, no_agent, bad_agent, no_lane, no_tool, serving = anyio.run(scenario)
    cli = run_cli("task", "show", "feedbeef", "--json", cwd=repo)
    assert unknown["reason"] == cli.json["error"] == "unknown_task" and unknown["code"] == "not_found"
    assert unknown["message"] == cli.json["message"]
    # the same advice, in each face's words (test_hint_advice.py)
    assert (unknown["hint"], cli.json["hint"]) == ("see `list_tasks`", "see `git lanes task list`")
    assert unknown["exit_code"] == cli.code == 1
    assert (wrong_type["code"], wrong_type["reason"], wrong_type["exit_code"]) == ("usage", "invalid_arguments", 2)
    assert "version" in wrong_type["message"]
    assert missing["code"] == "usage" and "title" in missing["message"]
    assert (escaping["code"], escaping["reason"]) == ("invalid", "path_outside")
    assert no_agent["reason"] == "no_agent" and "--agent" in no_agent["hint"]
    assert bad_agent["reason"] == "invalid_agent"
    assert no_lane["reason"] == "no_lane" and "register_agent(agent_id=\"a\", lane=LANE)" in no_lane["hint"]
    assert no_tool["reason"] == "unknown_tool"
    assert serving == []


def test_worktrees_are_assigned_listed_and_released(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            mine = await call(session, "assign_worktree", lane="feature/login")
            again = await call(session, "assign_worktree")
            taken = await fails(session, "assign_worktree", lane="feature/login", agent_id="coder-2")
            listed = await call(session, "list_worktrees")
            await anyio.Path(mine["workspace"], "draft.txt").write_text("unsaved\n")
            refused = await fails(session, "release_worktree")
            await call(session, "commit", prompt="Keep the draft", auto_accept=True)
            released = await call(session, "release_worktree")
            return mine, again, taken, listed, refused, released, await call(session, "list_worktrees")

    mine, again, taken, listed, refused, released, after = anyio.run(scenario)
    assert mine["created"] and not again["created"] and again["workspace"] == mine["workspace"]
    assert (taken["code"], taken["reason"]) == ("conflict", "lane_assigned")
    assert taken["details"]["holders"] == ["coder-1"]
    row = next(r for r in listed if r["name"] == "feature/login")
    assert row["agents"] == [{"id": "coder-1", "alive": True}] and row["workspace"] == mine["workspace"]
    assert (refused["code"], refused["reason"]) == ("refused", "dirty_workspace")
    assert released["workspace_removed"] == mine["workspace"]
    assert [r["name"] for r in after] == ["main"]
    assert run_cli("lane", "show", "feature/login", "--json", cwd=repo).code == 0  # the lane and its work stay


def test_any_call_from_the_servers_agent_extends_its_lease(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "reader") as session:
            await call(session, "list_tasks")

    assert run_cli("agent", "list", "--json", cwd=repo).json == []
    anyio.run(scenario)
    agents = run_cli("agent", "list", "--json", cwd=repo).json
    assert [(a["id"], a["alive"]) for a in agents] == [("reader", True)]


def test_a_number_that_is_not_finite_is_invalid_arguments(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            return [await fails(session, "commit", prompt="x", lane="main", cost_usd=value)
                    for value in ("Infinity", "NaN")] + [await fails(session, "wait_for_unblock", timeout_s="NaN")]

    for refused in anyio.run(scenario):
        assert (refused["code"], refused["reason"], refused["exit_code"]) == ("usage", "invalid_arguments", 2)


def test_an_empty_agent_id_is_refused_as_the_cli_refuses_it(repo):
    """`agent_id: ""` acted as the server's agent without a word, where the CLI refuses `--agent ""` whatever
    GIT_LANES_AGENT says."""
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            return (await fails(session, "post_board", text="hello", agent_id=""),
                    await fails(session, "heartbeat", agent_id=""))

    posted, beat = anyio.run(scenario)
    cli = run_cli("board", "post", "hello", "--agent", "", "--json", cwd=repo, env={"GIT_LANES_AGENT": "coder-1"})
    assert posted["reason"] == beat["reason"] == cli.json["error"] == "invalid_agent"
    assert posted["message"] == beat["message"] == cli.json["message"]
    assert run_cli("board", "read", "--all", "--json", cwd=repo).json["posts"] == []
    assert run_cli("agent", "list", "--json", cwd=repo).json == []  # nobody's lease was taken or extended


def test_a_file_name_that_is_not_utf8_is_a_result_not_a_protocol_error(repo):
    """A workspace holding a file named in Latin-1 failed `status` with a JSON-RPC error: the SDK writes
    UTF-8, which a name held as lone surrogates (as Python reads it) is not."""
    import json
    import os

    from conftest import workspace

    run_cli("lane", "create", "feat", cwd=repo)
    (workspace(repo, "feat") / os.fsdecode(b"caf\xe9.txt")).write_text("x\n")

    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            return await session.call_tool("status", {})

    result = anyio.run(scenario)
    assert not result.is_error
    assert json.loads(result.content[0].text) == run_cli("status", "--json", cwd=repo).json  # exactly the CLI's
    [dirty] = result.structured_content["dirty"]
    assert dirty["paths"] == {"caf\ufffd.txt": "added"}  # what a UTF-8 wire can carry; the text is exact


def test_a_broken_setup_can_be_skipped_by_an_agent_as_by_the_cli(repo, api):
    # Its refusal's hint named the CLI's --no-setup, which MCP had no way to say: an MCP agent got no
    # workspace at all until a person fixed .lanes.toml.
    from test_gates import declare

    declare(api, repo, '[setup]\nenv = { PORT = "{port0}" }\n')

    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            refused = await fails(session, "assign_worktree", lane="feature/a")
            assigned = await call(session, "assign_worktree", lane="feature/a", setup=False)
            return refused, assigned

    refused, assigned = anyio.run(scenario)
    assert refused["reason"] == "invalid_setup" and "assign_worktree(lane=LANE, setup=false)" in refused["hint"], \
        refused
    assert assigned["created"] and "setup" not in assigned
    assert run_cli("lane", "show", "feature/a", "--json", cwd=repo).code == 0


def test_resolve_question_takes_the_post_as_the_board_shows_it(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            await call(session, "post_board", text="which schema?", kind="question")
            posted = (await call(session, "read_board"))["posts"][0]
            by_hash = await call(session, "resolve_question", post="#1")
            await call(session, "post_board", text="and the cache?", kind="question")
            second = (await call(session, "read_board", all_posts=True))["posts"][-1]
            by_id = await call(session, "resolve_question", post=second["id"][:10])
            unknown = await fails(session, "resolve_question", post="#7")
            return posted, by_hash, by_id, unknown

    posted, by_hash, by_id, unknown = anyio.run(scenario)
    assert posted["seq"] == by_hash["post"] == 1 and by_id["post"] == 2
    assert unknown["reason"] == "unknown_post"


def test_accept_and_reject_record_the_agent_the_call_names(repo):
    """accept and reject took no agent_id, unlike every other tool that acts and unlike the CLI's --agent:
    a server started for no one agent recorded the git user in the operation log, and a client naming its
    agent was refused (unknown_argument)."""
    def proposed(text: str) -> str:
        (workspace(repo, "a") / "a.txt").write_text(text)
        result = run_cli("propose", "-w", "a", "-m", text, "--agent", "coder", "--json", cwd=repo)
        assert result.code == 0, result.err
        return result.json["id"]

    assert run_cli("lane", "create", "a", cwd=repo).code == 0
    first = proposed("first\n")

    async def scenario():
        async with mcp_session(repo) as session:
            await call(session, "reject", transition_id=first, reason="no", agent_id="reviewer")
            second = proposed("second\n")
            await call(session, "accept", transition_id=second[:8], agent_id="reviewer-2")
            return second, await call(session, "op_log", limit=5)

    second, log = anyio.run(scenario)
    actors = {entry["description"]: entry["actor"] for entry in log}
    assert actors[f"reject {first[:8]}"] == "reviewer" and actors[f"accept {second[:8]}"] == "reviewer-2", log


def test_gc_records_the_agent_the_call_names_or_the_servers(repo):
    """gc took no agent_id, as the CLI's gc took no --agent: what an agent's gc pruned was recorded as the
    git user."""
    def rejected(lane: str) -> None:
        assert run_cli("lane", "create", lane, cwd=repo).code == 0
        (workspace(repo, lane) / "a.txt").write_text("a\n")
        result = run_cli("propose", "-w", lane, "-m", "a", "--agent", "coder", "--json", cwd=repo)
        assert result.code == 0, result.err
        assert run_cli("reject", result.json["id"], "--reason", "no", cwd=repo).code == 0

    async def scenario():
        async with mcp_session(repo, "--agent", "keeper", "--toolsets", "core,maintenance") as session:
            rejected("a")
            named = await call(session, "gc", older_than="0", agent_id="sweeper")
            first = (await call(session, "op_log", limit=1))[0]
            rejected("b")
            await call(session, "gc", older_than="0")
            return named, first, (await call(session, "op_log", limit=1))[0]

    named, first, second = anyio.run(scenario)
    assert len(named["removed"]["rejected"]) == 1
    assert (first["actor"], second["actor"]) == ("sweeper", "keeper"), (first, second)


def test_releasing_with_no_lane_says_there_is_none_to_give_back(repo):
    """release_worktree takes no lane, yet an agent holding none was told "no lane was named" and to "name
    the lane"; and commit's hint named a placeholder for the very agent that called."""
    async def scenario():
        async with mcp_session(repo, "--agent", "ghost") as session:
            return await fails(session, "release_worktree"), await fails(session, "commit", prompt="x")

    released, committed = anyio.run(scenario)
    assert (released["reason"], released["message"]) == ("no_lane", "agent 'ghost' has no lane to give back")
    assert released["hint"] == "nothing to release: it gave its lane back already, or never had one"
    assert committed["message"] == "agent 'ghost' has no lane assigned, and no lane was named"
    assert committed["hint"] == "assign it one (`register_agent(agent_id=\"ghost\", lane=LANE)`), or name the lane"


def test_a_glob_longer_than_any_path_is_refused_and_claims_nothing(repo):
    """A 300,000-character glob was taken and stored as a claim, echoed whole in the result, and carried
    by every later read of the claims."""
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            refused = await fails(session, "claim_files", globs=["src/" + "x" * 300_000])
            return refused, await call(session, "list_claims")

    refused, claims = anyio.run(scenario)
    assert (refused["code"], refused["reason"]) == ("invalid", "invalid_glob"), refused
    assert refused["message"] == "a file glob is 300004 characters; the limit is 4096", refused
    assert claims == []


def test_promote_into_a_bad_lane_name_names_the_lane_not_the_prompt(repo):
    """The default prompt ("Promote LANE into TARGET") was built and checked first, so a target name too long
    to be a lane was refused as a prompt over its limit: a prompt the caller never gave."""
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            return [await fails(session, "promote", lane="main", into="x" * 300_000, dry_run=dry_run)
                    for dry_run in (True, False)]

    for refused in anyio.run(scenario):
        assert refused["reason"] == "invalid_lane_name", refused


def test_a_call_with_no_agent_is_told_how_to_name_one_in_one_clean_line(repo):
    """The hint quoted the server's own command line as a command reference, which the face then labelled
    as the CLI's: "`git lanes mcp --agent ID` (CLI) (or GIT_LANES_AGENT)"."""
    async def scenario():
        async with mcp_session(repo, env={"GIT_LANES_AGENT": ""}) as session:
            return await fails(session, "heartbeat")

    refused = anyio.run(scenario)
    assert refused["reason"] == "no_agent"
    assert refused["hint"] == "pass agent_id, or start this server with --agent ID (or GIT_LANES_AGENT set)"


def test_a_state_that_names_nothing_is_told_what_a_state_can_be(repo):
    """diff, restore and assign_worktree's base said only "unknown revision 'nope'", with no hint."""
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            return [await fails(session, "diff", a="nope", b="main"),
                    await fails(session, "restore", state="nope", lane="main"),
                    await fails(session, "assign_worktree", lane="feature/x", base="nope")]

    for refused in anyio.run(scenario):
        assert (refused["code"], refused["message"]) == ("not_found", "unknown revision 'nope'"), refused
        assert refused["hint"] == "name a lane (`status`), a transition id (`history`) or a git revision", refused
    assert "name a lane (`git lanes lane list`)" in run_cli("diff", "nope", "main", cwd=repo).err


def test_releasing_a_glob_not_claimed_points_at_the_agents_claims(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            await call(session, "claim_files", globs=["src/**"])
            return await fails(session, "release_files", globs=["src/*"])

    refused = anyio.run(scenario)
    assert (refused["reason"], refused["message"]) == ("unknown_claim", "coder-1 holds no claim on src/*")
    assert refused["hint"] == "release a glob as claimed: see `list_claims(agent=\"coder-1\")`"


def test_an_argument_of_a_json_type_its_schema_does_not_allow_is_refused(repo):
    """The SDK's validation is lax: `true` passed where a number goes became 1, so resolve_question(post=true)
    resolved post #1, and history(limit=true) listed one transition. An argument must be of a JSON type its
    published schema allows."""
    assert run_cli("board", "post", "Which store?", "--kind", "question", "--agent", "a", cwd=repo).code == 0

    async def scenario():
        async with mcp_session(repo, "--agent", "coder-1") as session:
            refused = [await fails(session, "resolve_question", post=True),
                       await fails(session, "history", limit=True),
                       await fails(session, "claim_task", task_id="feedbeef", version="one"),
                       await fails(session, "read_board", unread_only=1)]
            # a number or a boolean spelt as a string, as some clients send every argument, still passes
            spelt = [await call(session, "history", limit="1"),
                     await call(session, "read_board", unanswered_only="true")]
            return refused, spelt, await call(session, "read_board", unanswered_only=True)

    refused, spelt, board = anyio.run(scenario)
    for error in refused:
        assert (error["code"], error["reason"]) == ("usage", "invalid_arguments"), error
    assert refused[0]["message"] == "invalid arguments for resolve_question: post: true is not an integer or a string"
    assert refused[2]["message"] == "invalid arguments for claim_task: version: \"one\" is not an integer or null"
    assert [p["text"] for p in spelt[1]["posts"]] == ["Which store?"]
    assert [p["text"] for p in board["posts"]] == ["Which store?"]  # still unresolved
