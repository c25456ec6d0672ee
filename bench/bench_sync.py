"""Benchmark: `git lanes sync` with 1,000 remote ledger ops waiting, against a bare `git fetch` + `git push` of
the same refs in the same run.

Two cases: the clone has no local ops (the ledger fast-forwards), and the clone has 10 local board posts
(they are replayed on top of the 1,000 remote ops and the result is pushed with a lease). Every repetition
starts from pristine copies of the remote and the clone (file:// transport, so the network adds no noise).
Reports medians of wall time and of CPU time (the process's and its children's), each as a ratio to plain git,
for the CLI process a user runs and for an API object held open (a long-lived face); beside them, what a bare
interpreter and `python -c "import pygit2, click"` cost in the same run, and the load average.

    .venv/bin/python bench/bench_sync.py [--ops 1000] [--local 10] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import resource
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


def cpu_now() -> float:
    """CPU seconds of this process and of the children it waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def clocked(action) -> tuple[float, float]:
    """(wall, CPU) seconds of `action()`."""
    wall, cpu = time.perf_counter(), cpu_now()
    action()
    return time.perf_counter() - wall, cpu_now() - cpu


def time_cli_sync(clone: Path, env: dict[str, str] = ENV) -> tuple[float, float]:
    return clocked(lambda: subprocess.run([*CLI, "sync", "--json"], cwd=clone, check=True, capture_output=True,
                                          env=env))


def time_ordinary_cli_sync(clone: Path) -> tuple[float, float]:
    """The CLI made to take its ordinary path (click, pygit2): GIT_CONFIG_COUNT=0 adds no config for git, but
    the light path does not read config given that way, so it hands the sync over (git_lanes/api/sync_light.py)."""
    return time_cli_sync(clone, {**ENV, "GIT_CONFIG_COUNT": "0"})


def time_api_sync(clone: Path) -> tuple[float, float]:
    from git_lanes.api import Lanes

    api = Lanes(clone)  # opened before the clock starts, as a long-lived face holds it

    def sync() -> None:
        assert api.sync()["attempts"] == 1

    return clocked(sync)


def time_plain_git(clone: Path) -> tuple[float, float]:
    """The transport alone: fetch the same refs, then push the clone's ledger and notes under a lease."""
    def transport() -> None:
        git("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "origin", *SPECS, cwd=clone)
        ledger = git("rev-parse", "refs/lanes/ledger", cwd=clone).strip()
        notes = git("rev-parse", "refs/notes/lanes", cwd=clone).strip()
        git("push", "--quiet", "--atomic", "--force-with-lease=refs/bench/ledger:",
            "--force-with-lease=refs/bench/notes:", "origin", f"{ledger}:refs/bench/ledger",
            f"{notes}:refs/bench/notes", cwd=clone)

    return clocked(transport)


def time_python(code: str) -> tuple[float, float]:
    return clocked(lambda: subprocess.run([sys.executable, "-c", code], check=True, env=ENV))


def time_local_append(clone: Path, count: int = 10) -> float:
    """What one local ledger append costs in the same clone: a replayed op writes as much."""
    from git_lanes.api import Lanes

    api = Lanes(clone)
    started = time.perf_counter()
    for number in range(count):
        api.board_post(f"timing post {number}", "agent-timing")
    return (time.perf_counter() - started) / count


REFERENCES = {"python -c pass": "pass", "python -c 'import pygit2, click'": "import pygit2, click"}


def measure(remote: Path, clone: Path, scratch: Path, reps: int) -> dict[str, tuple[float, float]]:
    """name -> (median wall, median CPU), the actions interleaved so load drifts hit them alike."""
    actions = {"git fetch + git push": time_plain_git, "git lanes sync (CLI)": time_cli_sync,
               "git lanes sync, ordinary path": time_ordinary_cli_sync, "sync through an open API": time_api_sync}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in [*actions, *REFERENCES]}
    for _ in range(reps):
        for name, action in actions.items():
            _, copy = fresh_copy(remote, clone, scratch)
            samples[name].append(action(copy))
        for name, code in REFERENCES.items():
            samples[name].append(time_python(code))
    return {name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
            for name, values in samples.items()}


def report(title: str, medians: dict[str, tuple[float, float]]) -> None:
    wall_base, cpu_base = medians["git fetch + git push"]
    print(f"{title}, load average {os.getloadavg()[0]:.1f}:")
    for name, (wall, cpu) in medians.items():
        print(f"  {name:<36} wall {wall * 1000:7.1f} ms {wall / wall_base:5.2f}x   "
              f"CPU {cpu * 1000:7.1f} ms {cpu / cpu_base:5.2f}x plain git")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--local", type=int, default=10)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        base = Path(tmp)
        for local_ops in dict.fromkeys((0, args.local)):  # `--local 0`: the fast-forward case alone, once
            case = base / f"case-{local_ops}"
            case.mkdir()
            started = time.perf_counter()
            remote, clone = build(case, args.ops, local_ops)
            print(f"(built {args.ops} remote ops, {local_ops} local in {time.perf_counter() - started:.1f}s)")
            for warm_up in (time_cli_sync, time_ordinary_cli_sync):  # byte-code, caches
                warm_up(fresh_copy(remote, clone, case / "scratch")[1])
            medians = measure(remote, clone, case / "scratch", args.reps)
            label = "ledger fast-forwards" if local_ops == 0 else f"{local_ops} local ops replayed on top"
            report(f"sync with {args.ops} remote ops waiting, {label} (median of {args.reps})", medians)
            _, copy = fresh_copy(remote, clone, case / "scratch")
            print(f"  (one local ledger append in this clone: {time_local_append(copy) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
