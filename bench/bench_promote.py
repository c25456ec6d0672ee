"""Benchmark: promote a lane with 10 changed files into a trunk that moved 1 other file, against
`git merge --no-edit` of the same branches in the same run, at 5,000 and 50,000 files (2 KB each, in 50 and
500 folders). Reports medians and ratios for `git lanes promote` as a CLI process and through an API object
held open (a long-lived face such as the MCP server).

    .venv/bin/python bench/bench_promote.py [--sizes 5000,50000] [--reps 7]
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

FILES_PER_FOLDER = 100
FILE_BYTES = 2048
LANE_FILES = 10
CLI = [str(Path(sys.executable).with_name("git-lanes"))]


def git(*args: str, cwd: Path, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=True).stdout.decode()


def content(number: int, version: str = "") -> bytes:
    head = f"file {number} {version}\n".encode()
    return head + b"x" * (FILE_BYTES - len(head) - 1) + b"\n"


def path_of(number: int) -> str:
    return f"d{number // FILES_PER_FOLDER:03d}/f{number % FILES_PER_FOLDER:03d}.txt"


def fast_import(root: Path, size: int) -> None:
    """Base commit on main; the lane's commit (10 files changed) on `feature`; the trunk's move (1 other
    file) on main. One fast-import stream, so building 50,000 files takes seconds."""
    stream = []
    for number in range(size):
        data = content(number)
        stream.append(b"blob\nmark :%d\ndata %d\n%s\n" % (number + 10, len(data), data))
    stream.append(_commit("refs/heads/main", 1, None, "base",
                          [(path_of(n), f":{n + 10}") for n in range(size)]))
    stride = size // LANE_FILES
    lane_edits = [(path_of(k * stride + 1), content(k * stride + 1, "lane")) for k in range(LANE_FILES)]
    stream.append(_commit_inline("refs/heads/feature", 2, 1, "lane: 10 files", lane_edits))
    stream.append(_commit_inline("refs/heads/main", 3, 1, "trunk: 1 file", [(path_of(size - 1),
                                                                            content(size - 1, "trunk"))]))
    git("fast-import", "--quiet", cwd=root, stdin=b"".join(stream))


def _commit(ref: str, mark: int, parent: int | None, message: str, files: list[tuple[str, str]]) -> bytes:
    lines = [f"commit {ref}", f"mark :{mark}", "committer bench <bench@example.com> 1700000000 +0000",
             f"data {len(message)}", message]
    if parent:
        lines.append(f"from :{parent}")
    lines += [f"M 100644 {blob} {path}" for path, blob in files]
    return ("\n".join(lines) + "\n\n").encode()


def _commit_inline(ref: str, mark: int, parent: int, message: str, files: list[tuple[str, bytes]]) -> bytes:
    head = _commit(ref, mark, parent, message, []).rstrip(b"\n") + b"\n"
    body = b"".join(b"M 100644 inline %s\ndata %d\n%s\n" % (p.encode(), len(d), d) for p, d in files)
    return head + body + b"\n"


def build(size: int, directory: Path) -> dict:
    root = directory / f"repo-{size}"
    root.mkdir()
    git("init", "--quiet", "--initial-branch=main", cwd=root)
    git("config", "user.name", "bench", cwd=root)
    git("config", "user.email", "bench@example.com", cwd=root)
    fast_import(root, size)
    git("reset", "--hard", "--quiet", "main", cwd=root)
    subprocess.run(CLI + ["init"], cwd=root, check=True, capture_output=True)
    heads = {"trunk": git("rev-parse", "main", cwd=root).strip(),
             "lane": git("rev-parse", "feature", cwd=root).strip()}
    git("update-ref", "refs/lanes/heads/feature", heads["lane"], "", cwd=root)
    return {"root": root, **heads}


def rewind(setup: dict) -> None:
    """Put the trunk (and the main worktree) back where each run starts."""
    root = setup["root"]
    git("update-ref", "refs/heads/main", setup["trunk"], cwd=root)
    git("reset", "--hard", "--quiet", setup["trunk"], cwd=root)


def time_git_merge(setup: dict) -> float:
    rewind(setup)
    started = time.perf_counter()
    git("merge", "--no-edit", "--quiet", "feature", cwd=setup["root"])
    return time.perf_counter() - started


def time_cli(setup: dict) -> float:
    rewind(setup)
    started = time.perf_counter()
    subprocess.run(CLI + ["promote", "feature", "--auto-accept", "--agent-id", "bench"], cwd=setup["root"],
                   check=True, capture_output=True)
    elapsed = time.perf_counter() - started
    _check_landed(setup)
    return elapsed


def time_api(setup: dict, api) -> float:
    rewind(setup)
    started = time.perf_counter()
    result = api.promote("feature", auto_accept=True, agent_id="bench")
    elapsed = time.perf_counter() - started
    assert result["status"] == "accepted", result
    _check_landed(setup)
    return elapsed


def _check_landed(setup: dict) -> None:
    parents = git("rev-parse", "main^1", "main^2", cwd=setup["root"]).split()
    assert parents == [setup["trunk"], setup["lane"]], parents


def run(size: int, reps: int, directory: Path) -> dict:
    from git_lanes.api import Lanes

    setup = build(size, directory)
    api = Lanes(setup["root"])
    time_api(setup, api)  # warm the object cache once, as a long-lived face would be
    samples: dict[str, list[float]] = {"git merge": [], "lanes cli": [], "lanes api": []}
    for _ in range(reps):  # interleaved, so drift in the machine's load hits all three alike
        samples["git merge"].append(time_git_merge(setup))
        samples["lanes cli"].append(time_cli(setup))
        samples["lanes api"].append(time_api(setup, api))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    return {"size": size, **medians,
            "cli ratio": medians["lanes cli"] / medians["git merge"],
            "api ratio": medians["lanes api"] / medians["git merge"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="bench-promote-"))
    try:
        print(f"{'files':>7}  {'git merge':>10}  {'lanes cli':>10}  {'lanes api':>10}  {'cli/git':>8}  {'api/git':>8}")
        for size in (int(s) for s in args.sizes.split(",")):
            r = run(size, args.reps, directory)
            print(f"{r['size']:>7}  {r['git merge'] * 1000:>8.1f}ms  {r['lanes cli'] * 1000:>8.1f}ms  "
                  f"{r['lanes api'] * 1000:>8.1f}ms  {r['cli ratio']:>7.2f}x  {r['api ratio']:>7.2f}x", flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("GIT_LANES_AGENT", "bench")
    main()
