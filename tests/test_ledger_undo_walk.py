"""Undoing a ledger op over a long log of delta commits (issue 15): finding what blocks it stays linear in
how far back it looks."""

from __future__ import annotations

import pytest
from ledger_helpers import Clock, ledger_head

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain import ledger_undo
from git_lanes.model import ledger_delta
from git_lanes.model.ledger_delta import CHECKPOINT_EVERY


@pytest.fixture
def lanes(repo):
    return Lanes(repo, clock=Clock())


def test_an_undo_blocked_by_an_op_far_back_names_it_reading_each_commit_once(lanes, repo):
    """The walk back for what changed a record reads each commit once, not each one's way back to its
    checkpoint again (16 reads per step on average)."""
    task = lanes.task_create("t", actor="lead")["task"]
    created = ledger_head(repo)
    while (ledger.log.materialized(lanes.ctx.store, ledger_head(repo)).depth + 1) % CHECKPOINT_EVERY:
        lanes.board_post("padding", "coder-2")
    lanes.task_claim(task, "coder-1")
    store = lanes.ctx.store
    assert ledger.log.is_checkpoint(store, ledger_head(repo))  # the precondition: the change is a checkpoint's
    steps = 3 * CHECKPOINT_EVERY
    for i in range(steps):
        lanes.board_post(f"post {i}", "coder-2")
    head = ledger_head(repo)
    inverse = ledger_undo.inverse(store, created, "lead", 1_900_000_000.0)
    reads = []
    read = store.commit_info
    store.commit_info = lambda oid: reads.append(oid) or read(oid)
    ledger_delta._KNOWN.clear()
    found = ledger_undo.blockers(store, head, inverse, created)
    assert [(b["path"], b["by_type"]) for b in found] == [(f"tasks/{task[:2]}/{task}.json", "task.claim")]
    assert len(reads) < steps + 3 * CHECKPOINT_EVERY, len(reads)
