"""The state after a delta commit is its checkpoint's tree with the records since laid over it (issue 15).
Listings see it as git would see a tree holding those records: a folder whose every record was deleted is
gone, a folder emptied and refilled is there, and the root lists like any folder. The API's State, an op's
Tx and the agent hook's LedgerReader agree."""

from __future__ import annotations

import json

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


def test_an_agent_acting_copies_neither_its_record_nor_its_read_position_and_changes_neither(repo, monkeypatch):
    """`touch` (every op an agent makes) only looks at the agent's record and read position and writes a new
    dict of its own where it changes one: a deep copy of each was most of what it cost an op. The records
    the process keeps for later states stay as they were."""
    from git_lanes.domain import agents
    from git_lanes.ledger import state

    lanes = Lanes(repo, clock=Clock())
    lanes.claim_add(["src/**"], "lead")  # the first op: a checkpoint; the next ones are deltas
    lanes.agent_heartbeat("coder-1")
    lanes.board_post("hello", "coder-1")
    store = lanes.ctx.store
    head = ledger.head(store)
    overlay = ledger.log.materialized(store, head).overlay
    # both records are overlaid (a KeyError otherwise): the copies the old code made
    kept = {path: json.dumps(overlay[path]) for path in (agents.agent_path("coder-1"), agents.reader_path("coder-1"))}
    copies: list[object] = []
    real = state._copy
    monkeypatch.setattr(state, "_copy", lambda record: copies.append(record) or real(record))
    tx = Tx(ledger.state_at(store, head))
    record = agents.touch(tx, "coder-1", 5000.0)
    assert copies == []
    assert record["last_seen"] == 5000.0 and tx.edits[agents.agent_path("coder-1")]["last_seen"] == 5000.0
    assert {path: json.dumps(overlay[path]) for path in kept} == kept  # what later states read is unchanged


def test_a_record_read_from_a_state_is_its_own_and_changing_it_changes_no_later_state(repo):
    """The overlay's records are the very objects the process keeps for every later state of the ledger, and
    the next checkpoint writes them out: `State.get` handed them out as they were, so a reader that changed
    one (a nested list) changed the ledger every later read in the process saw. An op's `Tx.get` of its own
    edit shared the edit's lists the same way."""
    lanes = Lanes(repo, clock=Clock())
    lanes.claim_add(["src/**"], "coder-1")  # the first op: a checkpoint; the next ones are deltas
    first = lanes.task_create("first", actor="coder-1").task
    second = lanes.task_create("second", actor="coder-1", depends=(first,)).task
    store = lanes.ctx.store
    path = f"tasks/{second[:2]}/{second}.json"
    head = ledger.head(store)
    assert path in ledger.log.materialized(store, head).overlay  # the precondition: a record of the overlay

    for read in (lambda state: state.get(path), lambda state: state.peek(path) and state.get(path)):
        record = read(ledger.state_at(store, head))
        record["depends"].append("f" * 16)
        record["title"] = "changed"
    again = ledger.state_at(store, head).get(path)
    assert (again["depends"], again["title"]) == ([first], "second")
    assert [t.depends for t in lanes.task_list() if t.id == second] == [(first,)]

    tx = Tx(ledger.state_at(store, head))
    tx.put(path, {**tx.get(path), "files": ["a"]})
    tx.get(path)["files"].append("b")
    assert tx.peek(path)["files"] == ["a"]


@pytest.mark.parametrize("found, outcome", [
    (1, "read"), (1.0, "read"), (1.5, "read"), (True, "malformed"), ("1", "malformed"), (0, "malformed"),
    (None, "malformed"), (float("nan"), "malformed"), (float("inf"), "malformed"), (2, "unsupported"),
    (2.0, "unsupported")])
def test_a_record_of_this_format_is_read_on_one_test_and_any_other_format_as_before(found, outcome):
    """Every record an op reads is checked for its format: `format: 1`, what every writer of this format
    writes, passes on one test (no call to check_format); any other value is judged as before."""
    import sys

    from git_lanes.errors import MalformedRecord, UnsupportedFormat
    from git_lanes.model import format as formats

    record = {"format": found, "note": "laid over"}
    state = State(None, at=Materialized(None, {X: record}, 1))  # type: ignore[arg-type]
    calls: list[str] = []

    def count(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == formats.__file__:
            calls.append(frame.f_code.co_name)

    sys.setprofile(count)
    try:
        read = state.peek(X)
    except MalformedRecord:
        read = "malformed"
    except UnsupportedFormat:
        read = "unsupported"
    finally:
        sys.setprofile(None)
    assert read == (record if outcome == "read" else outcome)
    if outcome == "read":  # format 1 on the one test; 1.0 or a minor version 1.5 through check_format
        assert (calls == []) == (type(found) is int)
