"""What the MCP face costs: a claim_task + post_board + read_board round trip through the MCP SDK's stdio
client against `git lanes mcp`, against the same three calls on the held-open API in the same run (the
overhead per call is the difference), with a CLI process per call and plain `git update-ref` per call for
scale; and how fast a server starts (spawn to the initialize answer, and to the tool list, which waits for the
SDK to load).

Run: .venv/bin/python bench/bench_mcp.py [--rounds 100] [--starts 10]

API and MCP rounds alternate in blocks of ten, so load on this shared machine falls on both alike."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

CALLS = ("claim_task", "post_board", "read_board")
BLOCK = 10


def new_repo(parent: Path) -> Path:
    from git_lanes.api import Lanes

    root = parent / "repo"
    root.mkdir()
    (root / "README.md").write_text("bench\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    Lanes.init(root, "main")
    return root


def api_round(api, task: str, agent: str, samples: dict[str, list[float]]) -> None:
    for name, call in (("claim_task", lambda: api.task_claim(task, agent)),
                       ("post_board", lambda: api.board_post(f"working on {task[:8]}", agent)),
                       ("read_board", lambda: api.board_read(agent))):
        started = time.perf_counter()
        call()
        samples[name].append(time.perf_counter() - started)


async def mcp_round(session: ClientSession, task: str, samples: dict[str, list[float]]) -> None:
    for name, arguments in (("claim_task", {"task_id": task}), ("post_board", {"text": f"working on {task[:8]}"}),
                            ("read_board", {})):
        started = time.perf_counter()
        result = await session.call_tool(name, arguments)
        samples[name].append(time.perf_counter() - started)
        assert not result.is_error, result.content[0].text


def server(repo: Path, agent: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "git_lanes", "mcp", "--agent", agent],
                                 cwd=str(repo), env=dict(os.environ))


async def compare(repo: Path, rounds: int) -> tuple[dict, dict]:
    from git_lanes.api import Lanes

    api = Lanes(repo)
    tasks = [api.task_create(f"task {i}", actor="lead")["task"] for i in range(2 * rounds)]
    via_api: dict[str, list[float]] = {name: [] for name in CALLS}
    via_mcp: dict[str, list[float]] = {name: [] for name in CALLS}
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server(repo, "mcp-agent"), errlog=quiet) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("list_tasks", {})  # warm: the SDK and the repository are loaded
            api_round(api, tasks[0], "api-agent", {name: [] for name in CALLS})
            for block in range(0, rounds, BLOCK):
                for i in range(block, min(block + BLOCK, rounds)):
                    api_round(api, tasks[2 * i], "api-agent", via_api)
                for i in range(block, min(block + BLOCK, rounds)):
                    await mcp_round(session, tasks[2 * i + 1], via_mcp)
    return via_api, via_mcp


def processes(repo: Path, count: int) -> tuple[list[float], list[float]]:
    """A `git lanes task claim` process per call, and plain `git update-ref` per call, for scale."""
    from git_lanes.api import Lanes

    tasks = [Lanes(repo).task_create(f"cli {i}", actor="lead")["task"] for i in range(count)]
    cli, git = [], []
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    for i, task in enumerate(tasks):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "git_lanes", "task", "claim", task, "--agent", "cli-agent"], cwd=repo,
                       check=True, capture_output=True)
        cli.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run(["git", "update-ref", f"refs/bench/{i}", head], cwd=repo, check=True)
        git.append(time.perf_counter() - started)
    return cli, git


async def wakes(repo: Path, count: int) -> list[float]:
    """From a post's acknowledgement (made on the API, in this process) to wait_for_unblock's answer."""
    from git_lanes.api import Lanes

    api = Lanes(repo)
    latencies = []
    with open(os.devnull, "w") as quiet:
        async with stdio_client(server(repo, "waiter"), errlog=quiet) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("read_board", {})
            for i in range(count):
                waiting = anyio.Event()
                posted: list[float] = []

                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    waiting.set()

                async def post() -> None:
                    await waiting.wait()
                    await anyio.sleep(0.05)  # well inside the wait, past its first look at the ledger
                    api.board_post(f"wake {i}", "poster", to="waiter")
                    posted.append(time.perf_counter())

                async with anyio.create_task_group() as group:
                    group.start_soon(post)
                    result = await session.call_tool("wait_for_unblock", {"timeout_s": 30},
                                                     progress_callback=on_progress)
                    latencies.append(time.perf_counter() - posted[0])
                assert result.structured_content["reason"] == "post", result.content[0].text
    return latencies


async def starts(repo: Path, count: int) -> tuple[list[float], list[float]]:
    initialized, listed = [], []
    with open(os.devnull, "w") as quiet:
        for _ in range(count):
            started = time.perf_counter()
            async with stdio_client(server(repo, "starter"), errlog=quiet) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                initialized.append(time.perf_counter() - started)
                await session.list_tools()
                listed.append(time.perf_counter() - started)
    return initialized, listed


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f}"


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100, help="claim + post + read rounds each way")
    parser.add_argument("--starts", type=int, default=10, help="server starts to time")
    parser.add_argument("--wakes", type=int, default=40, help="wait_for_unblock wake-ups to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as parent:
        repo = new_repo(Path(parent))
        via_api, via_mcp = anyio.run(compare, repo, args.rounds)
        cli, git = processes(repo, max(10, args.rounds // 5))
        initialized, listed = anyio.run(starts, repo, args.starts)
        woken = anyio.run(wakes, repo, args.wakes)

    print(f"round trips: {args.rounds} each way; medians in ms (p95 in brackets)\n")
    print("| call | held-open API | MCP over stdio | overhead per call | MCP / API |")
    print("|---|---:|---:|---:|---:|")
    for name in CALLS:
        a, m = statistics.median(via_api[name]), statistics.median(via_mcp[name])
        print(f"| {name} | {a * 1000:.2f} ({p95(via_api[name]) * 1000:.2f}) | {m * 1000:.2f} "
              f"({p95(via_mcp[name]) * 1000:.2f}) | {(m - a) * 1000:+.2f} | {m / a:.2f} |")
    api_total = sum(statistics.median(via_api[n]) for n in CALLS)
    mcp_total = sum(statistics.median(via_mcp[n]) for n in CALLS)
    print(f"| round trip (3 calls) | {api_total * 1000:.2f} | {mcp_total * 1000:.2f} | "
          f"{(mcp_total - api_total) * 1000:+.2f} | {mcp_total / api_total:.2f} |")
    print(f"\nfor scale, a process per call: `git lanes task claim` {ms(cli)} ms, plain `git update-ref` {ms(git)} ms "
          f"(MCP claim_task / git update-ref = {statistics.median(via_mcp['claim_task']) / statistics.median(git):.2f})")
    print(f"wait_for_unblock woken by a post ({args.wakes} samples): p50 {ms(woken)} ms, p95 "
          f"{p95(woken) * 1000:.1f} ms after the post's acknowledgement")
    print(f"server start ({args.starts} spawns): initialize answered after {ms(initialized)} ms (max "
          f"{max(initialized) * 1000:.0f}), tools listed after {ms(listed)} ms (the SDK loaded)")


if __name__ == "__main__":
    main()
