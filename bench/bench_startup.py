"""Benchmark: command start-up, each command against the bare interpreter that loads what it must load.

Issue 15's goals: every read command (`status`, `lane list`, `task list`, `board read`, `history`, `show`)
within 1.25x of `python -c "import pygit2, click"`, and `--help` / `--version` / `hook` within 1.25x of
`python -c "import click"`. Runs alternate command and baseline (so load on the shared machine hits both
alike), each a real process, in a repository with a few lanes, transitions, tasks and posts. `hook` is what
Claude Code runs before each tool call, `git lanes hook claude PreToolUse`, fed a Read on stdin in a lane of
the repository bench_hook.py sets up (policy committed, run started), so each call admits and charges.
Byte-code is written once before timing, as in any installed use. Medians of wall time and of CPU time
(user + system, less bent by other jobs) are reported with their ratios.

    .venv/bin/python bench/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_hook

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
LANES = [sys.executable, "-m", "git_lanes"]
WITH_GIT = [sys.executable, "-c", "import pygit2, click"]
BARE = [sys.executable, "-c", "import click"]


def setup(base: Path) -> tuple[Path, str]:
    from git_lanes.api import Lanes

    root = base / "repo"
    root.mkdir()
    (root / "README.md").write_text("# bench\n")
    api = Lanes.init(root, "main")[0]
    for number in range(3):
        api.lane_create(f"feature-{number}")
        (root / ".lanes" / "workspaces" / f"feature-{number}" / "f.txt").write_text(f"{number}\n")
        transition = api.commit(f"change {number}", "bench", lane=f"feature-{number}")["id"]
    api.agent_register("bench")
    for number in range(10):
        api.task_create(f"task {number}", actor="bench")
        api.board_post(f"post {number}", "bench")
    return root, transition


class Case:
    """One command to time: its words, its baseline, where it runs, and what it reads on stdin."""

    def __init__(self, words: list[str], baseline: list[str], cwd: Path, stdin: bytes | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.words, self.baseline, self.cwd, self.stdin, self.env = words, baseline, cwd, stdin, env or ENV

    @property
    def name(self) -> str:
        return "show" if self.words[0] == "show" else " ".join(self.words[:2])


def timed(command: list[str], cwd: Path, stdin: bytes | None = None, env: dict[str, str] = ENV) \
        -> tuple[float, float]:
    """(wall ms, CPU ms) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, input=stdin, capture_output=True, cwd=cwd, env=env)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or b'"deny"' in proc.stdout:
        raise SystemExit(f"{command} failed: {proc.returncode} {proc.stdout!r} {proc.stderr!r}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as scratch:
        root, transition = setup(Path(scratch))
        (Path(scratch) / "hook").mkdir()
        workspace, run = bench_hook.start(Path(scratch) / "hook")
        cases = [Case(words, WITH_GIT, root) for words in (["status"], ["lane", "list"], ["task", "list"],
                                                           ["board", "read"], ["history"],
                                                           ["show", transition[:8]])]
        cases += [Case(["--help"], BARE, root), Case(["--version"], BARE, root),
                  Case(["hook", "claude", "PreToolUse"], BARE, workspace, bench_hook.payload(workspace, "Read", 0),
                       {**ENV, "GIT_LANES_RUN": run})]
        for case in cases:  # byte-code, caches
            timed(LANES + case.words, case.cwd, case.stdin, case.env)
            timed(case.baseline, case.cwd)
        print(f"start-up, medians of {args.runs} real processes alternating with their baseline; "
              f"load: {os.getloadavg()[0]:.2f}")
        print(f"{'command':<16} {'baseline':<22} {'base ms':>8} {'cmd ms':>8} {'wall':>6} {'base cpu':>9} "
              f"{'cmd cpu':>8} {'cpu':>6}")
        for case in cases:
            walls: tuple[list[float], list[float]] = ([], [])
            cpus: tuple[list[float], list[float]] = ([], [])
            for _ in range(args.runs):
                for index, (command, stdin, env) in enumerate(((case.baseline, None, ENV),
                                                               (LANES + case.words, case.stdin, case.env))):
                    wall, cpu = timed(command, case.cwd, stdin, env)
                    walls[index].append(wall)
                    cpus[index].append(cpu)
            base_wall, wall = statistics.median(walls[0]), statistics.median(walls[1])
            base_cpu, cpu = statistics.median(cpus[0]), statistics.median(cpus[1])
            label = "import pygit2, click" if case.baseline is WITH_GIT else "import click"
            print(f"{case.name:<16} {label:<22} {base_wall:>8.1f} {wall:>8.1f} {wall / base_wall:>5.2f}x "
                  f"{base_cpu:>9.1f} {cpu:>8.1f} {cpu / base_cpu:>5.2f}x")


if __name__ == "__main__":
    main()
