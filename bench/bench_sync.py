"""Benchmark: `git lanes sync` with 1,000 remote ledger ops waiting, against a bare `git fetch` + `git push` of
the same refs in the same run.

Two cases: the clone has no local ops (the ledger fast-forwards), and the clone has 10 local board posts
(they are replayed on top of the 1,000 remote ops and the result is pushed with a lease). Every repetition
starts from pristine copies of the remote and the clone (file:// transport, so the network adds no noise).
Reports medians, the ratio to plain git, and the sync measured through an API object held open (a
long-lived face) as well as the CLI process a user runs.

    .venv/bin/python bench/bench_sync.py [--ops 1000] [--local 10] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [str(Path(sys.executable).with_name("git-lanes"))]
# Byte-code is written (once, before timing), as in any installed use: a CLI that recompiled every module on
# each run would measure the compiler, not the sync.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
SPECS = ["+refs/heads/main:refs/bench-remote/heads/main", "+refs/lanes/*:refs/bench-remote/lanes/*",
         "+refs/notes/lanes:refs/bench-remote/notes/lanes"]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True, text=True).stdout


def build(base: Path, remote_ops: int, local_ops: int) -> tuple[Path, Path]:
    """A bare remote holding `remote_ops` ledger ops the clone has not seen, and the clone (with its own
    `local_ops` posts)."""
    from git_lanes.api import Lanes

    remote = base / "remote.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote), cwd=base)
    origin = base / "origin"
    origin.mkdir()
    (origin / "README.md").write_text("# bench\n")
    api = Lanes.init(origin, "main")[0]
    git("remote", "add", "origin", f"file://{remote}", cwd=origin)
    api.board_post("first", "setup")
    api.sync()
    clone = base / "clone"
    git("clone", "--quiet", f"file://{remote}", str(clone), cwd=base)
    Lanes.open_for_sync(clone)[0].pull()
    for number in range(remote_ops):
        api.board_post(f"remote post {number}", f"agent-{number % 8}")
    api.sync()
    mine = Lanes(clone)
    for number in range(local_ops):
        mine.board_post(f"local post {number}", "agent-local")
    git("gc", "--quiet", cwd=remote)
    return remote, clone


def fresh_copy(remote: Path, clone: Path, scratch: Path) -> tuple[Path, Path]:
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir()
    new_remote, new_clone = scratch / "remote.git", scratch / "clone"
    shutil.copytree(remote, new_remote, symlinks=True)
    shutil.copytree(clone, new_clone, symlinks=True)
    git("remote", "set-url", "origin", f"file://{new_remote}", cwd=new_clone)
    return new_remote, new_clone


def time_cli_sync(clone: Path) -> float:
    started = time.perf_counter()
    subprocess.run([*CLI, "sync", "--json"], cwd=clone, check=True, capture_output=True, env=ENV)
    return time.perf_counter() - started


def time_api_sync(clone: Path) -> float:
    from git_lanes.api import Lanes

    api = Lanes(clone)  # opened before the clock starts, as a long-lived face holds it
    started = time.perf_counter()
    report = api.sync()
    elapsed = time.perf_counter() - started
    assert report["attempts"] == 1, report
    return elapsed


def time_plain_git(clone: Path) -> float:
    """The transport alone: fetch the same refs, then push the clone's ledger and notes under a lease."""
    started = time.perf_counter()
    git("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "origin", *SPECS, cwd=clone)
    ledger = git("rev-parse", "refs/lanes/ledger", cwd=clone).strip()
    notes = git("rev-parse", "refs/notes/lanes", cwd=clone).strip()
    git("push", "--quiet", "--atomic", "--force-with-lease=refs/bench/ledger:",
        "--force-with-lease=refs/bench/notes:", "origin", f"{ledger}:refs/bench/ledger",
        f"{notes}:refs/bench/notes", cwd=clone)
    return time.perf_counter() - started


def time_local_append(clone: Path, count: int = 10) -> float:
    """What one local ledger append costs in the same clone: a replayed op writes as much."""
    from git_lanes.api import Lanes

    api = Lanes(clone)
    started = time.perf_counter()
    for number in range(count):
        api.board_post(f"timing post {number}", "agent-timing")
    return (time.perf_counter() - started) / count


def measure(remote: Path, clone: Path, scratch: Path, reps: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {"git fetch + git push": [], "git lanes sync (CLI)": [],
                                       "sync through an open API": []}
    for _ in range(reps):
        for name, action in (("git fetch + git push", time_plain_git), ("git lanes sync (CLI)", time_cli_sync),
                             ("sync through an open API", time_api_sync)):
            _, copy = fresh_copy(remote, clone, scratch)
            samples[name].append(action(copy))
    return {name: statistics.median(values) for name, values in samples.items()}


def report(title: str, medians: dict[str, float]) -> None:
    base = medians["git fetch + git push"]
    print(title)
    for name, value in medians.items():
        print(f"  {name:<28} {value * 1000:8.1f} ms   {value / base:5.2f}x plain git")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--local", type=int, default=10)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        base = Path(tmp)
        for local_ops in (0, args.local):
            case = base / f"case-{local_ops}"
            case.mkdir()
            started = time.perf_counter()
            remote, clone = build(case, args.ops, local_ops)
            print(f"(built {args.ops} remote ops, {local_ops} local in {time.perf_counter() - started:.1f}s)")
            time_cli_sync(fresh_copy(remote, clone, case / "scratch")[1])  # byte-code, caches
            medians = measure(remote, clone, case / "scratch", args.reps)
            label = "ledger fast-forwards" if local_ops == 0 else f"{local_ops} local ops replayed on top"
            report(f"sync with {args.ops} remote ops waiting, {label} (median of {args.reps}):", medians)
            _, copy = fresh_copy(remote, clone, case / "scratch")
            print(f"  (one local ledger append in this clone: {time_local_append(copy) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
