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
    from conftest import rolled_up

    rolled_up(repo)  # git fsck racing a background roll-up's pack removal reports what it then missed
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
        op = ledger_op(repo, commit)
        if "edits" not in op:
            shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=repo, capture_output=True, text=True)
            return json.loads(shown.stdout) if shown.returncode == 0 else None
        if path in op["edits"]:
            return op["edits"][path]
        commit = _git(repo, "rev-parse", f"{commit}^").strip()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def ledger_op(repo: Path, rev: str = "refs/lanes/ledger") -> dict:
    """The op of ledger commit `rev` as JSON, with its `edits` (the line after the op's, in a delta) merged in;
    {} for a commit that holds no op."""
    import json

    lines = _git(repo, "log", "-1", "--format=%b", rev).split("\n")
    try:
        op = json.loads(lines[0])
    except ValueError:
        return {}
    if len(lines) > 1 and lines[1].strip():
        op.update(json.loads(lines[1]))
    return op


def ledger_message(summary: str, op: dict) -> str:
    """The message of a ledger commit holding `op`: its `edits`, if it has them, on the line after the op's."""
    import json

    edits = {"edits": op["edits"]} if "edits" in op else None
    line = json.dumps({key: value for key, value in op.items() if key != "edits"})
    return f"{summary}\n\n{line}\n" + (f"{json.dumps(edits)}\n" if edits is not None else "")
