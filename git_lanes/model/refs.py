"""The storage contract's ref names (DESIGN.md §1), in one place."""

from __future__ import annotations

DEFAULT_TRUNK = "main"
LANE_HEADS = "refs/lanes/heads/"
PROPOSALS = "refs/lanes/proposals/"
REJECTED = "refs/lanes/rejected/"
BACKUPS = "refs/lanes/backups/"
DELETED = "refs/lanes/deleted/"
LEDGER = "refs/lanes/ledger"
RUNS = "refs/lanes/runs/"
NOTES = "refs/notes/lanes"
REMOTE_PREFIX = "refs/lanes-remote/"
WORKSPACES_DIR = ".lanes/workspaces"


def lane_ref(lane: str, trunk: str) -> str:
    return f"refs/heads/{trunk}" if lane == trunk else LANE_HEADS + lane


def proposal_ref(transition_id: str) -> str:
    return PROPOSALS + transition_id


def rejected_ref(transition_id: str) -> str:
    return REJECTED + transition_id
