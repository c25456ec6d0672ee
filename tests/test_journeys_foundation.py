"""Journeys of a demanding user through the foundation and promotion, each pinning a bug found by using
`git lanes` as an agent or a person would: through real processes in real repositories."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, run_cli, workspace

AGENT = {"GIT_LANES_AGENT": "coder-1"}


def lanes(*args: str, cwd: Path) -> object:
    return run_cli(*args, cwd=cwd, env=AGENT)


def _lane(repo: Path, name: str) -> Path:
    created = lanes("lane", "create", name, cwd=repo)
    assert created.code == 0, created.err
    return Path(created.out.strip())


def _commit(cwd: Path, message: str, *extra: str):
    return lanes("commit", "-m", message, "--auto-accept", *extra, cwd=cwd)


def _foreign_commit(repo: Path) -> str:
    """A commit no transition record describes."""
    tree = git("write-tree", cwd=repo).strip()
    return git("commit-tree", tree, "-m", "not a lanes state", cwd=repo).strip()


# -- notes written by hand under refs/notes/lanes ---------------------------------------------------------
def test_a_foreign_note_in_the_lanes_notes_ref_is_skipped_by_listings(repo):
    ws = _lane(repo, "a")
    (ws / "x.txt").write_text("x\n")
    assert _commit(ws, "add x").code == 0
    # A person annotates a commit that holds no record (a commit of its own) and appends to a record.
    ledger = _foreign_commit(repo)
    git("notes", "--ref", "lanes", "add", "-m", "hi", ledger, cwd=repo)
    head = git("rev-parse", "refs/lanes/heads/a", cwd=repo).strip()
    git("notes", "--ref", "lanes", "append", "-m", "reviewed by a human", head, cwd=repo)
    shown = lanes("history", "--json", cwd=repo)
    assert shown.code == 0, shown.err
    assert [t["intent"]["prompt"] for t in shown.json["transitions"]] == ["add x", "Initial state"]
    assert lanes("status", cwd=repo).code == 0
    assert lanes("lane", "show", "a", cwd=repo).code == 0


def test_a_lanes_record_of_an_unknown_format_version_still_fails_clearly(repo):
    ledger = _foreign_commit(repo)
    record = {"format": 2, "id": "f" * 16, "lane": "main"}
    git("notes", "--ref", "lanes", "add", "-m", json.dumps(record), ledger, cwd=repo)
    shown = lanes("history", cwd=repo)
    assert shown.code == 1
    assert "format 2" in shown.err and "Traceback" not in shown.err
