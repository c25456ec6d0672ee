"""Benchmark: command start-up, each command against the bare interpreter that loads what it must load.

Issue 15's goals: every read command (`status`, `lane list`, `task list`, `board read`, `history`, `show`)
within 1.25x of `python -c "import pygit2, click"`, and `--help` / `--version` within 1.25x of
`python -c "import click"`. Runs alternate command and baseline (so load on the shared machine hits both
alike), each a real process, in a repository with a few lanes, transitions, tasks and posts. Byte-code is
written once before timing, as in any installed use. Medians of wall time and of CPU time (user + system,
less bent by other jobs) are reported with their ratios.

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


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, cwd=cwd, env=ENV)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{command} failed: {proc.returncode} {proc.stderr!r}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as scratch:
        root, transition = setup(Path(scratch))
        cases = [(["status"], WITH_GIT), (["lane", "list"], WITH_GIT), (["task", "list"], WITH_GIT),
                 (["board", "read"], WITH_GIT), (["history"], WITH_GIT), (["show", transition[:8]], WITH_GIT),
                 (["--help"], BARE), (["--version"], BARE)]
        for words, baseline in cases:  # byte-code, caches
            timed(LANES + words, root)
            timed(baseline, root)
        print(f"start-up, medians of {args.runs} real processes alternating with their baseline; "
              f"load: {os.getloadavg()[0]:.2f}")
        print(f"{'command':<16} {'baseline':<22} {'base ms':>8} {'cmd ms':>8} {'wall':>6} {'base cpu':>9} "
              f"{'cmd cpu':>8} {'cpu':>6}")
        for words, baseline in cases:
            walls: tuple[list[float], list[float]] = ([], [])
            cpus: tuple[list[float], list[float]] = ([], [])
            for _ in range(args.runs):
                for index, command in enumerate((baseline, LANES + words)):
                    wall, cpu = timed(command, root)
                    walls[index].append(wall)
                    cpus[index].append(cpu)
            base_wall, wall = statistics.median(walls[0]), statistics.median(walls[1])
            base_cpu, cpu = statistics.median(cpus[0]), statistics.median(cpus[1])
            name = " ".join(words[:2]) if words[0] != "show" else "show"
            label = "import pygit2, click" if baseline is WITH_GIT else "import click"
            print(f"{name:<16} {label:<22} {base_wall:>8.1f} {wall:>8.1f} {wall / base_wall:>5.2f}x "
                  f"{base_cpu:>9.1f} {cpu:>8.1f} {cpu / base_cpu:>5.2f}x")


if __name__ == "__main__":
    main()
