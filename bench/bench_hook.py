"""Benchmark: the agent hook's PreToolUse wall time per call, against `python -c pass` in the same run.

Every agent tool call runs `git lanes hook <cli> PreToolUse`, so this is the hottest path in the product
(DESIGN.md §6): goal p50 <= 60 ms on the project's machine, i.e. at most ~45 ms over a bare interpreter.
Calls alternate with bare interpreters (so load on the shared machine hits both alike), each a real process
fed a Claude Code payload on stdin, in a lane workspace of a repository whose run log grows with every call
(each call appends an event). Mixes: a Read (the commonest call), a Write in the lane (write gate, claims),
and a Bash line (parsed by tree-sitter). Byte-code is written once before timing, as in any installed use.

    .venv/bin/python bench/bench_hook.py [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOOK = [sys.executable, "-m", "git_lanes", "hook", "claude", "PreToolUse"]
BARE = [sys.executable, "-c", "pass"]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def setup(base: Path) -> Path:
    from git_lanes.api import Lanes

    root = base / "repo"
    root.mkdir()
    (root / "README.md").write_text("# bench\n")
    api = Lanes.init(root, "main")[0]
    api.lane_create("feature")
    workspace = root / ".lanes" / "workspaces" / "feature"
    # A budget big enough that no call is denied for it, so each call is a full admit-and-charge.
    (root / ".lanes.toml").write_text("[budget]\nphases = { execute = 100000 }\n")
    subprocess.run(["git", "add", ".lanes.toml"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "policy"], cwd=root,
                   check=True)
    return workspace


def start(base: Path) -> tuple[Path, str]:
    """The lane's workspace (see `setup`) and the id of a run started in it, for GIT_LANES_RUN."""
    from git_lanes.api import Lanes

    workspace = setup(base)
    return workspace, Lanes(workspace).run_start("bench", phase="execute", cwd=workspace)["id"]


def payload(workspace: Path, kind: str, number: int) -> bytes:
    tool = {"Read": ("Read", {"file_path": str(workspace / "README.md")}),
            "Write": ("Write", {"file_path": str(workspace / "src" / f"f{number}.py"), "content": "x"}),
            "Bash": ("Bash", {"command": "git status && ls -la | wc -l", "description": "look"})}[kind]
    return json.dumps({"session_id": "bench", "transcript_path": str(workspace / "none.jsonl"),
                       "cwd": str(workspace), "permission_mode": "default", "hook_event_name": "PreToolUse",
                       "tool_name": tool[0], "tool_input": tool[1], "tool_use_id": f"toolu_{number}"}).encode()


CPU: dict[int, list[float]] = {}


def timed(command: list[str], data: bytes | None, cwd: Path) -> float:
    """Wall time of one process, in ms; its CPU time (user + system) is kept in CPU, keyed by the list the
    caller appends the wall time to, as a figure less bent by other jobs on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, input=data, capture_output=True, cwd=cwd, env=ENV)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    timed.cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000  # type: ignore[attr-defined]
    if proc.returncode != 0 or b'"deny"' in proc.stdout:
        raise SystemExit(f"hook call failed: {proc.returncode} {proc.stdout!r} {proc.stderr!r}")
    return elapsed


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as scratch:
        workspace, run = start(Path(scratch))
        ENV["GIT_LANES_RUN"] = run
        for kind in ("Read", "Write", "Bash"):  # byte-code, caches
            timed(HOOK, payload(workspace, kind, 0), workspace)
        rows = []
        for kind in ("Read", "Write", "Bash"):
            bare, hook, bare_cpu, hook_cpu = [], [], [], []
            for number in range(args.calls):
                bare.append(timed(BARE, None, workspace))
                bare_cpu.append(timed.cpu)  # type: ignore[attr-defined]
                hook.append(timed(HOOK, payload(workspace, kind, number + 1), workspace))
                hook_cpu.append(timed.cpu)  # type: ignore[attr-defined]
            rows.append((kind, bare, hook, bare_cpu, hook_cpu))
        from git_lanes.api import Lanes

        events = len(Lanes(workspace).run_events(run))
    print(f"PreToolUse, {args.calls} calls per tool, real processes; the run log ends with {events} events")
    print("wall time:")
    print(f"{'tool':<6} {'python -c pass p50':>19} {'hook p50':>9} {'hook p95':>9} {'p50 ratio':>10} {'p50 over bare':>14}")
    for kind, bare, hook, _, _ in rows:
        b50, h50, h95 = statistics.median(bare), statistics.median(hook), percentile(hook, 0.95)
        print(f"{kind:<6} {b50:>16.1f} ms {h50:>6.1f} ms {h95:>6.1f} ms {h50 / b50:>9.2f}x {h50 - b50:>+11.1f} ms")
    print("CPU time (user + system) of the process, less bent by other jobs on a shared machine:")
    for kind, _, _, bare_cpu, hook_cpu in rows:
        b50, h50 = statistics.median(bare_cpu), statistics.median(hook_cpu)
        print(f"{kind:<6} bare {b50:6.1f} ms  hook {h50:6.1f} ms  ratio {h50 / b50:4.2f}x  over bare {h50 - b50:+6.1f} ms")


if __name__ == "__main__":
    main()
