"""Shared pieces of the ledger tests: a clock the test moves by hand, and reading the ledger with plain git."""

from __future__ import annotations

import subprocess
from pathlib import Path

START = 1_800_000_000.0


class Clock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def ledger_head(repo: Path) -> str | None:
    proc = subprocess.run(["git", "rev-parse", "--verify", "-q", "refs/lanes/ledger"], cwd=repo,
                          capture_output=True, text=True)
    return proc.stdout.strip() or None


def ledger_oneline(repo: Path) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%s", "refs/lanes/ledger"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def fsck_clean(repo: Path) -> None:
    fsck = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling"], cwd=repo, capture_output=True,
                          text=True)
    assert fsck.returncode == 0 and "error" not in fsck.stderr, fsck.stderr


def ledger_record(repo: Path, path: str, rev: str = "refs/lanes/ledger") -> dict | None:
    """Record `path` as plain git reads it, by the rule the README gives: the newest commit whose op carries
    `edits` for the path holds it (null: deleted); reaching a commit whose op carries no edits (a checkpoint),
    its tree holds it."""
    import json

    commit = _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}").strip()
    while True:
        body = _git(repo, "log", "-1", "--format=%b", commit)
        try:
            op = json.loads(body)
        except ValueError:
            op = {}
        if "edits" not in op:
            shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=repo, capture_output=True, text=True)
            return json.loads(shown.stdout) if shown.returncode == 0 else None
        if path in op["edits"]:
            return op["edits"][path]
        commit = _git(repo, "rev-parse", f"{commit}^").strip()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout
