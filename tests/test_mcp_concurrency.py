"""Many servers, one repository: claim races between servers, and wait_for_unblock waking on what another
process does, reporting progress while it waits, and ending (taking nothing) when the client cancels."""

from __future__ import annotations

import anyio
from conftest import run_cli
from mcp_helpers import call, fails, mcp_session


def test_two_servers_race_one_claim_and_exactly_one_wins(repo):
    created = [run_cli("task", "create", f"task {n}", "--json", cwd=repo).json for n in range(3)]

    async def scenario():
        async with mcp_session(repo, "--agent", "a") as first, mcp_session(repo, "--agent", "b") as second:
            outcomes = []
            for task in created:
                results: dict = {}

                async def claim(name: str, session, task=task, results=results) -> None:
                    results[name] = await session.call_tool("claim_task", {"task_id": task["task"], "version": 1})

                async with anyio.create_task_group() as group:
                    group.start_soon(claim, "a", first)
                    group.start_soon(claim, "b", second)
                outcomes.append(results)
            return outcomes

    for task, results in zip(created, anyio.run(scenario)):
        winners = [name for name, result in results.items() if not result.is_error]
        assert len(winners) == 1, results
        loser = next(result for result in results.values() if result.is_error)
        assert loser.structured_content["error"]["code"] == "conflict"
        assert loser.structured_content["error"]["exit_code"] == 3
        assert run_cli("task", "show", task["task"], "--json", cwd=repo).json["owner"] == winners[0]


async def _waiting(session, timeout: float, started: anyio.Event, progress: list) -> dict:
    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))
        started.set()

    result = await session.call_tool("wait_for_unblock", {"timeout_s": timeout}, progress_callback=on_progress)
    return result.structured_content


def test_wait_for_unblock_wakes_on_a_post_made_through_the_cli(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "b") as session:
            await call(session, "register_agent")
            started, progress, got = anyio.Event(), [], {}

            async def wait() -> None:
                got.update(await _waiting(session, 120, started, progress))

            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await started.wait()
                posted = await anyio.to_thread.run_sync(
                    lambda: run_cli("board", "post", "schema is ready", "--agent", "a", "--to", "b", cwd=repo))
                assert posted.code == 0, posted.err
            return got, progress

    got, progress = anyio.run(scenario)
    assert got["reason"] == "post" and [p["text"] for p in got["posts"]] == ["schema is ready"]
    assert progress[0][1] == 120 and "waiting" in progress[0][2]
    assert run_cli("board", "read", "--agent", "b", "--unread", "--json", cwd=repo).json["posts"] == []  # taken


def test_wait_for_unblock_reports_progress_until_its_timeout(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "b") as session:
            progress: list = []
            return await _waiting(session, 2.5, anyio.Event(), progress), progress

    got, progress = anyio.run(scenario)
    assert got["reason"] == "timeout"
    assert len(progress) >= 2 and [p[0] for p in progress] == sorted(p[0] for p in progress)


def test_cancelling_wait_for_unblock_ends_the_wait_and_takes_nothing(repo):
    async def scenario():
        async with mcp_session(repo, "--agent", "b") as session:
            await call(session, "register_agent")
            started = anyio.Event()
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(_waiting, session, 300, started, [])
                    await started.wait()  # the wait is under way on the server
                    scope.cancel()
            assert scope.cancelled_caught
            # Had the server kept waiting, it would take this post the moment it lands.
            posted = await anyio.to_thread.run_sync(
                lambda: run_cli("board", "post", "after the cancel", "--agent", "a", "--to", "b", cwd=repo))
            assert posted.code == 0, posted.err
            await anyio.sleep(0.5)
            return await call(session, "read_board", unread_only=True)

    board = anyio.run(scenario)
    assert [p["text"] for p in board["posts"]] == ["after the cancel"]


def test_a_refusal_inside_wait_for_unblock_is_the_api_s_error_not_an_internal_one(repo):
    # The wait runs in a task group beside its progress reports; an error from the API came out of it
    # wrapped in an ExceptionGroup, which the server answered as `internal` ("a bug").
    async def scenario():
        async with mcp_session(repo) as session:
            return await fails(session, "wait_for_unblock", agent_id="not an agent id", timeout_s=5)

    refused = anyio.run(scenario)
    assert (refused["code"], refused["reason"]) == ("invalid", "invalid_agent"), refused
    assert refused["message"] == "invalid agent id 'not an agent id'"
