"""The state after a delta commit is its checkpoint's tree with the records since laid over it (issue 15).
Listings see it as git would see a tree holding those records: a folder whose every record was deleted is
gone, a folder emptied and refilled is there, and the root lists like any folder. The API's State, an op's
Tx and the agent hook's LedgerReader agree."""

from __future__ import annotations

import pytest
from ledger_helpers import Clock, ledger_head

from git_lanes import ledger
from git_lanes.api import Lanes
from git_lanes.domain import control, steering
from git_lanes.ledger import State, Tx
from git_lanes.model.ledger_delta import Materialized

RECORD = {"format": 1, "note": "laid over"}
X, Y = "tasks/ab/abx.json", "tasks/cd/cdy.json"


@pytest.fixture
def base(repo):
    """A checkpoint holding two tasks in two fan-out folders, and a claim."""
    lanes = Lanes(repo, clock=Clock())
    lanes.claim_add(["src/**"], "coder-1")  # the first op: a checkpoint
    store = lanes.ctx.store
    tree = store.write_record_tree(store.tree_of(ledger_head(repo)), {X: b'{"format": 1}\n', Y: b'{"format": 1}\n'})
    return lanes, tree


def listing(names, directory: str, paths: set[str]) -> None:
    """`names(directory)` is what a tree holding exactly `paths` holds there."""
    prefix = f"{directory}/" if directory else ""
    expected = sorted({path[len(prefix):].split("/")[0] for path in paths if path.startswith(prefix)})
    assert names(directory) == expected, directory


@pytest.mark.parametrize("overlay", [
    {X: None},  # tasks/ab is gone, tasks/ stays
    {X: None, Y: None},  # tasks/ is gone from the root
    {X: None, Y: None, "tasks/ab/abz.json": RECORD},  # emptied, then refilled
    {"claims/coder-1.json": None, "claims/coder-2.json": RECORD},
    {"ports/feature.json": RECORD},  # a folder the checkpoint does not have
])
def test_listings_see_the_overlay_as_git_would_see_the_tree(base, repo, overlay):
    lanes, tree = base
    store = lanes.ctx.store
    checkpoint = State(store, tree)
    held = {path for top in checkpoint.names("") for path in checkpoint.files(top)}
    paths = ({*held, *overlay} - {path for path, record in overlay.items() if record is None})
    state = State(store, at=Materialized(tree, overlay, 1))
    reader = steering.LedgerReader(control.open_repo(repo))
    reader.root, reader._overlay = tree, overlay
    for directory in ("", "tasks", "tasks/ab", "tasks/cd", "claims", "ports"):
        listing(state.names, directory, paths)
        listing(reader.names, directory, paths)
    assert list(state.files("")) == sorted(paths)  # every record, by the root as by any folder
    for path in paths:
        assert (state.get(path) is not None) and reader.record(path) is not None


def test_an_op_lists_the_root_with_its_own_new_folders(base):
    lanes, tree = base
    tx = Tx(State(lanes.ctx.store, tree))
    tx.put("ports/feature.json", RECORD)
    assert tx.names("") == sorted({*State(lanes.ctx.store, tree).names(""), "ports"})
