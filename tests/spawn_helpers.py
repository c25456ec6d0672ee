"""Spawning the fake agent CLI (tests/fake_agent.py) in a test repository: its script, the trunk's
`[agent.claude]` command that starts it, and its journal of what it did and what the hooks told it."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from conftest import run_cli
from fake_agent import whole_lines
from hook_helpers import set_policy

FAKE_AGENT = Path(__file__).resolve().parent / "fake_agent.py"
# A safeguard for waits on real processes; never an assertion about speed.
PATIENCE = 180.0


def use_fake_agent(repo: Path, tmp: Path, stages: dict, *, max_parallel: int = 4, extra: str = "",
                   stop_grace: float = 2) -> Path:
    """Commit a `.lanes.toml` on the trunk whose claude command is the fake agent playing `stages`; returns
    the journal's path. Every session marks its start and end in `tmp/sessions` (see `most_at_once`)."""
    script = tmp / "script.json"
    journal = tmp / "journal.jsonl"
    script.write_text(json.dumps({"stages": stages, "journal": str(journal), "transcripts": str(tmp / "transcripts"),
                                  "sessions": str(tmp / "sessions")}))
    journal.touch()
    command = json.dumps([sys.executable, str(FAKE_AGENT), str(script), "{prompt}"])
    set_policy(repo, f"[agent]\nmax_parallel = {max_parallel}\nstop_grace = {stop_grace}\n\n[agent.claude]\ncommand = {command}\n"
                     + extra)
    return journal


def most_at_once(sessions: Path) -> tuple[int, int]:
    """From the agents' own start/end lines (written in order under a lock): the most sessions that ran at
    once, and how many ran in all."""
    live = most = total = 0
    for line in whole_lines(sessions):
        live += 1 if line.startswith("start ") else -1
        total += line.startswith("start ")
        most = max(most, live)
    assert live == 0, "every session that started also ended"
    return most, total


def journal(path: Path, run: str | None = None, event: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in whole_lines(path) if line.strip()]
    return [r for r in rows if (run is None or r["run"] == run) and (event is None or r["event"] == event)]


def wait_for(predicate: Callable[[], object], what: str, timeout: float = PATIENCE) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def show(repo: Path, run: str) -> dict:
    result = run_cli("run", "show", run, "--json", cwd=repo)
    assert result.code == 0, result.err
    return result.json


def finished(repo: Path, run: str) -> bool:
    """The run's supervisor has ended (it records so as its last act)."""
    state = show(repo, run)
    return not state["supervisor"] and bool(state.get("events"))
