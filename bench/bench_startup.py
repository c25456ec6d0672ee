"""Benchmark: command start-up, each command against the bare interpreter that loads what it must load.

Issue 15's goals: every read command (`status`, `lane list`, `task list`, `board read`, `history`, `show`)
within 1.25x of `python -c "import pygit2, click"`, and `--help` / `--version` / `hook` within 1.25x of
`python -c "import click"`. Runs alternate command and baseline (so load on the shared machine hits both
alike), each a real process, in a repository with a few lanes, transitions, tasks and posts. `hook` is what
Claude Code runs before each tool call, `git lanes hook claude PreToolUse`, fed a Read on stdin in a lane of
the repository bench_hook.py sets up (policy committed, run started), so each call admits and charges.
Byte-code is written once before timing, as in any installed use. Medians of wall time and of CPU time
(user + system, less bent by other jobs) are reported with their ratios.

On a shared machine the baseline itself moves by a third between rows, so those ratios swing by +-0.4 from run
to run. `--instructions` counts instead the instructions each process executes (and its children: git), under
valgrind's cachegrind with its cache simulation off, the cheapest exact count valgrind offers; no load bends
it. Hash randomisation is pinned (PYTHONHASHSEED=0) on both sides; what still moves (memory layout, ~0.1%, and
a rare run ~1% over) is taken out by keeping the least of `--runs` counts (2 unless told). Each baseline is
counted once per directory and shared by its rows. It needs valgrind and takes a few minutes.

    .venv/bin/python bench/bench_startup.py [--runs 15]
    .venv/bin/python bench/bench_startup.py --instructions [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
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
# cachegrind counts each instruction (`I refs`) at about half callgrind's cost when it simulates no cache;
# its output file would only repeat the count, and children (git) are followed so that both modes see them.
VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--branch-sim=no",
            "--cachegrind-out-file=/dev/null", "--trace-children=yes"]
INSTRUCTIONS = re.compile(rb"^==\d+== I\s+refs:\s+([\d,]+)$", re.MULTILINE)


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
    # A reader's worst case: the head as far from its checkpoint as a delta gets (31 messages to read back)
    from git_lanes import ledger
    from git_lanes.model.ledger_delta import CHECKPOINT_EVERY

    while ledger.log.materialized(api.ctx.store, ledger.head(api.ctx.store)).depth < CHECKPOINT_EVERY - 1:
        api.board_post("padding", "bench")
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


def instructions(command: list[str], cwd: Path, stdin: bytes | None = None, env: dict[str, str] = ENV) -> int:
    """Instructions one process and its children execute, counted by valgrind."""
    proc = subprocess.run(VALGRIND + command, input=stdin, capture_output=True, cwd=cwd,
                          env={**env, "PYTHONHASHSEED": "0"})
    counts = INSTRUCTIONS.findall(proc.stderr)
    if proc.returncode != 0 or b'"deny"' in proc.stdout or not counts:
        raise SystemExit(f"{command} failed under valgrind: {proc.returncode} {proc.stdout!r} {proc.stderr!r}")
    return sum(int(count.replace(b",", b"")) for count in counts)


def label(case: Case) -> str:
    return "import pygit2, click" if case.baseline is WITH_GIT else "import click"


def time_cases(cases: list[Case], runs: int) -> None:
    print(f"start-up, medians of {runs} real processes alternating with their baseline; "
          f"load: {os.getloadavg()[0]:.2f}")
    print(f"{'command':<16} {'baseline':<22} {'base ms':>8} {'cmd ms':>8} {'wall':>6} {'base cpu':>9} "
          f"{'cmd cpu':>8} {'cpu':>6}")
    for case in cases:
        walls: tuple[list[float], list[float]] = ([], [])
        cpus: tuple[list[float], list[float]] = ([], [])
        for _ in range(runs):
            for index, (command, stdin, env) in enumerate(((case.baseline, None, ENV),
                                                           (LANES + case.words, case.stdin, case.env))):
                wall, cpu = timed(command, case.cwd, stdin, env)
                walls[index].append(wall)
                cpus[index].append(cpu)
        base_wall, wall = statistics.median(walls[0]), statistics.median(walls[1])
        base_cpu, cpu = statistics.median(cpus[0]), statistics.median(cpus[1])
        print(f"{case.name:<16} {label(case):<22} {base_wall:>8.1f} {wall:>8.1f} {wall / base_wall:>5.2f}x "
              f"{base_cpu:>9.1f} {cpu:>8.1f} {cpu / base_cpu:>5.2f}x")


def count_cases(cases: list[Case], runs: int) -> None:
    print(f"start-up, instructions executed (valgrind cachegrind, PYTHONHASHSEED=0), least of {runs}; "
          f"load: {os.getloadavg()[0]:.2f}")
    print(f"{'command':<16} {'baseline':<22} {'base Minstr':>11} {'cmd Minstr':>11} {'ratio':>6}")
    baselines: dict[tuple[str, Path], int] = {}
    for case in cases:
        key = (label(case), case.cwd)
        if key not in baselines:  # the same baseline in the same directory counts the same
            baselines[key] = min(instructions(case.baseline, case.cwd) for _ in range(runs))
        base = baselines[key]
        count = min(instructions(LANES + case.words, case.cwd, case.stdin, case.env) for _ in range(runs))
        print(f"{case.name:<16} {label(case):<22} {base / 1e6:>11.1f} {count / 1e6:>11.1f} {count / base:>5.2f}x",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, help="processes per command and baseline (15; 2 with --instructions)")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind instead of timing (load-proof; needs valgrind)")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        print("bench_startup: --instructions needs valgrind on PATH (apt-get install valgrind)", file=sys.stderr)
        raise SystemExit(2)
    runs = args.runs or (2 if args.instructions else 15)
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
        (count_cases if args.instructions else time_cases)(cases, runs)


if __name__ == "__main__":
    main()
