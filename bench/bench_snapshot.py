"""Snapshot cost after changing one file, against `git add -A && git commit -q` on the same tree.

Run: .venv/bin/python bench/bench_snapshot.py [--sizes 5000,50000] [--trials 15]

Prints medians and ratios for (a) the API held open in one process, which from its third snapshot on stages
only what its inotify watcher heard of and splices only those entries into the index file (how many
snapshots followed the watcher is printed; the others scanned every file and are in the median too), (b) a `git lanes commit
--auto-accept` process per snapshot, the fixed start-up cost of that process, and (c) `lane create` against
`git worktree add`. Wall time and CPU time (this process's and its children's) are both compared. Every
figure is measured in the same run as the git baseline it is compared with."""

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

FILE_SIZE = 2048
BIN = Path(sys.executable).parent


def populate(root: Path, files: int, folders: int) -> None:
    payload = (b"x" * 63 + b"\n") * (FILE_SIZE // 64)
    for i in range(files):
        folder = root / f"d{i % folders:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:05d}.txt").write_bytes(payload[:-12] + f"{i:011d}\n".encode())


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


# Installed packages run from compiled bytecode; a PYTHONDONTWRITEBYTECODE environment would charge every
# `git-lanes` process for compiling its modules again.
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def touch_one(root: Path, trial: int, folders: int) -> None:
    # A different file each time, with new content, so neither side can reuse an earlier blob.
    path = root / f"d{trial % folders:03d}" / f"f{trial % folders:05d}.txt"
    path.write_bytes(path.read_bytes()[:-30] + f"{trial:029d}\n".encode())


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def cpu_seconds() -> float:
    """CPU time of this process and of its children that were waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_size(base: Path, files: int, trials: int) -> dict:
    folders = files // 100
    plain = base / f"git-{files}"
    populate(plain, files, folders)
    git("init", "-q", "-b", "main", cwd=plain)
    git("add", "-A", cwd=plain)
    git("commit", "-q", "-m", "initial", cwd=plain)

    lanes_root = base / f"lanes-{files}"
    populate(lanes_root, files, folders)
    subprocess.run([BIN / "git-lanes", "init", "--trunk", "main"], cwd=lanes_root, check=True,
                   capture_output=True)
    from git_lanes.api import Lanes

    api = Lanes(lanes_root)
    api.lane_create("held")
    held = lanes_root / ".lanes" / "workspaces" / "held"
    api.lane_create("proc")
    proc_ws = lanes_root / ".lanes" / "workspaces" / "proc"

    def git_commit() -> None:
        subprocess.run(["sh", "-c", "git add -A && git commit -q -m change"], cwd=plain, check=True)

    def api_commit(trial: int) -> None:
        record = api.commit(f"change {trial}", "bench", lane="held", auto_accept=True)
        assert record["status"] == "accepted", record

    def cli_commit(trial: int) -> None:
        subprocess.run([BIN / "git-lanes", "commit", "-m", f"change {trial}", "--agent-id", "bench",
                        "--auto-accept"], cwd=proc_ws, check=True, capture_output=True, env=CLI_ENV)

    samples: dict[str, list[float]] = {"git": [], "api": [], "cli": [], "startup": [], "git_version": [],
                                       "git_cpu": [], "api_cpu": [], "cli_cpu": []}
    watched = 0
    # Interleaved so that machine noise hits every contender alike; the first round only warms caches.
    for trial in range(trials + 1):
        for name, root, action in (("git", plain, git_commit), ("api", held, lambda: api_commit(trial)),
                                   ("cli", proc_ws, lambda: cli_commit(trial))):
            touch_one(root, trial + 1, folders)
            cpu = cpu_seconds()
            elapsed = timed(action)
            cpu = cpu_seconds() - cpu
            if trial:
                samples[name].append(elapsed)
                samples[f"{name}_cpu"].append(cpu)
                if name == "api" and api.ctx.store.snapshot_scan(held) is None:
                    watched += 1
        if trial:
            samples["startup"].append(timed(lambda: subprocess.run([BIN / "git-lanes", "--version"], env=CLI_ENV,
                                                                   check=True, capture_output=True)))
            samples["git_version"].append(timed(lambda: subprocess.run(["git", "--version"], check=True,
                                                                       capture_output=True)))

    create = {"git": [], "lanes": []}
    for trial in range(3):
        create["git"].append(timed(lambda: git("worktree", "add", "--detach", "-q", str(base / f"wt-{files}-{trial}"),
                                               "HEAD", cwd=plain)))
        create["lanes"].append(timed(lambda: subprocess.run([BIN / "git-lanes", "lane", "create", f"c{trial}"],
                                                            cwd=lanes_root, check=True, capture_output=True,
                                                            env=CLI_ENV)))
    return {name: median_ms(values) for name, values in samples.items()} | \
        {"create_git": median_ms(create["git"]), "create_lanes": median_ms(create["lanes"]), "watched": watched}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000")
    parser.add_argument("--trials", type=int, default=15)
    args = parser.parse_args()
    os.environ.setdefault("GIT_AUTHOR_NAME", "bench")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    os.environ.setdefault("GIT_COMMITTER_NAME", "bench")
    os.environ.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    with tempfile.TemporaryDirectory(prefix="git-lanes-bench-") as tmp:
        for files in (int(s) for s in args.sizes.split(",")):
            r = bench_size(Path(tmp), files, args.trials)
            print(f"{files} files, 1 changed, median of {args.trials} (load average {os.getloadavg()[0]:.2f}):")
            print(f"  git add -A && git commit -q       {r['git']:8.1f} ms")
            print(f"  (a) API held open, commit+accept  {r['api']:8.1f} ms  ratio {r['api'] / r['git']:.2f}x  "
                  f"CPU {r['api_cpu']:.1f} ms vs {r['git_cpu']:.1f} ms: {r['api_cpu'] / r['git_cpu']:.2f}x  "
                  f"({r['watched']} of {args.trials} followed the watcher)")
            print(f"  (b) git-lanes commit --auto-accept {r['cli']:7.1f} ms  ratio {r['cli'] / r['git']:.2f}x  "
                  f"overhead {r['cli'] - r['git']:+.1f} ms  CPU {r['cli_cpu'] / r['git_cpu']:.2f}x")
            print(f"      start-up: git-lanes --version {r['startup']:.1f} ms, git --version "
                  f"{r['git_version']:.1f} ms")
            print(f"  (c) git lanes lane create         {r['create_lanes']:8.1f} ms  vs git worktree add "
                  f"{r['create_git']:.1f} ms  ratio {r['create_lanes'] / r['create_git']:.2f}x")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
