"""Benchmark: `git lanes undo` of a sync that brought in many peer board posts, and `git lanes op log` after it.

Machine A posts `--posts` board messages (the API, one process) and syncs; machine B, a clone that pulled
before, syncs them in. Each repetition starts from pristine copies of B and the remote (file:// transport) and
times, as the CLI a user runs: `op log`, `undo --dry-run`, `undo`, then `sync` on B (pushing the retractions).
Reports medians of wall time.

    .venv/bin/python bench/bench_undo.py [--posts 3000] [--reps 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_sync  # the repositories: this folder is on sys.path when a script here runs

CLI = [str(Path(sys.executable).with_name("git-lanes"))]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
STEPS = (("op log", ["op", "log", "--json"]), ("undo --dry-run", ["undo", "--dry-run", "--json"]),
         ("undo", ["undo", "--json"]), ("sync after", ["sync", "--json"]))


def build(base: Path, posts: int) -> Path:
    """Machine B (a clone that pulled before), which has synced in `posts` posts from machine A: bench_sync's
    repositories, synced by the CLI."""
    clone = bench_sync.build(base, posts, 0)[1]
    synced = subprocess.run([*CLI, "sync", "--json"], cwd=clone, env=ENV, capture_output=True, text=True)
    assert synced.returncode == 0, synced.stderr
    return clone


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--posts", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build here (or reuse what is built here)")
    options = parser.parse_args()
    base = options.keep or Path(tempfile.mkdtemp(prefix="bench-undo-"))
    base.mkdir(parents=True, exist_ok=True)
    if not (base / "clone").exists():
        start = time.perf_counter()
        build(base, options.posts)
        print(f"built in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    times: dict[str, list[float]] = {name: [] for name, _ in STEPS}
    for _ in range(options.reps):
        clone = bench_sync.fresh_copy(base / "remote.git", base / "clone", base / "scratch")[1]
        for name, args in STEPS:
            start = time.perf_counter()
            done = subprocess.run([*CLI, *args], cwd=clone, env=ENV, capture_output=True, text=True)
            times[name].append(time.perf_counter() - start)
            assert done.returncode == 0, (name, done.stderr)
    print(f"posts={options.posts} reps={options.reps} load={os.getloadavg()[0]:.2f}")
    for name, _ in STEPS:
        print(f"  {name:16} median {statistics.median(times[name]):7.2f} s  "
              f"(min {min(times[name]):.2f}, max {max(times[name]):.2f})")


if __name__ == "__main__":
    main()
