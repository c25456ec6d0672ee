"""The fold decides exactly as it did before its reads were made cheaper (issue 15): a fixed sequence of ops
with pinned ids and times, folded one on the other, gives the same edits and results, byte for byte, as the
recording `tests/data/fold_golden.json` made with the fold before. It covers the board's paths that read
posts and cursors (broadcasts with and without a cursor, a sender's own broadcasts with others unread,
directed posts, answers, reads), claims, and a peer's malformed post that the counts step over."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from git_lanes import ledger
from git_lanes.domain.coordination import FOLD
from git_lanes.errors import LanesError, problem
from git_lanes.ledger import Op, State
from git_lanes.model.ledger_delta import Materialized

GOLDEN = Path(__file__).parent / "data" / "fold_golden.json"
AGENTS = ("coder-1", "coder-2", "coder-3")


def ops() -> list[tuple[str, str, dict]]:
    """(type, actor, args); a task is named by its creating op's index (`@n`), filled in when folded."""
    seq: list[tuple[str, str, dict]] = [("agent.register", a, {"agent": a}) for a in AGENTS]
    seq += [("task.create", "lead", {"title": f"task {i}", "files": [f"src/{i}/**"] if i % 2 else []})
            for i in range(4)]
    seq += [("board.post", "coder-1", {"text": "before any cursor"}),
            ("board.read", "coder-1", {"agent": "coder-1", "through": 1}),
            ("board.read", "coder-2", {"agent": "coder-2", "through": 0}),
            ("task.claim", "coder-1", {"agent": "coder-1", "task": "@3", "version": 1}),
            ("board.post", "coder-1", {"text": "took it"}),  # nothing unread: the cursor moves past it
            ("board.post", "coder-2", {"text": "me too", "kind": "question"}),
            ("board.post", "coder-1", {"text": "again"}),  # one unread: remembered as own
            ("board.post", "coder-2", {"text": "to you", "to": "coder-1"}),
            ("board.post", "coder-3", {"text": "to a stranger", "to": "coder-9"}),
            ("agent.heartbeat", "coder-1", {"agent": "coder-1"}),
            ("task.claim", "coder-2", {"agent": "coder-2", "task": "@3", "version": 2}),
            ("task.claim", "coder-2", {"agent": "coder-2", "task": "@4", "version": 1}),
            ("board.answer", "coder-1", {"post": 3, "text": "yes"}),
            ("board.resolve", "coder-2", {"post": 3}),
            ("board.resolve", "coder-2", {"post": 2}),
            ("board.post", "coder-2", {"text": "after the bad one"}),  # post 8 is a peer's, malformed
            ("board.post", "coder-1", {"text": "and mine"}),
            ("agent.heartbeat", "coder-2", {"agent": "coder-2"}),
            ("board.read", "coder-1", {"agent": "coder-1", "through": 100}),
            ("board.post", "coder-1", {"text": "read it all"})]
    for i in range(12):
        actor = AGENTS[i % 3]
        seq += [("task.claim", actor, {"agent": actor, "task": f"@{3 + i % 4}"}),
                ("board.post", actor, {"text": f"round {i}"} | ({"to": AGENTS[(i + 1) % 3]} if i % 4 == 0 else {}))]
    return seq


def fold_all() -> list[dict]:
    overlay: dict = {}
    tasks: dict[str, str] = {}
    out = []
    for n, (kind, actor, args) in enumerate(ops()):
        if n == 22:  # a peer wrote post 8 in a shape no git-lanes writes
            overlay = {**overlay, "board/00/00/00/00000008.json": {"format": 1, "seq": 8, "broadcasts": "many"}}
        args = {k: tasks[v] if isinstance(v, str) and v.startswith("@") else v for k, v in args.items()}
        op = Op(f"{n + 1:016x}", kind, actor, 1_800_000_000.0 + n * 7.5, args)
        if kind == "task.create":
            tasks[f"@{n}"] = op.id
        try:
            edits, result = FOLD.apply(State(None, at=Materialized(None, overlay, n)), op)  # type: ignore[arg-type]
        except LanesError as exc:
            out.append({"op": n, "refused": problem(exc)})
            continue
        overlay = {**overlay, **edits}
        out.append({"op": n, "edits": edits, "result": result})
    return out


def encoded(rows: list[dict]) -> str:
    return json.dumps(rows, sort_keys=True, indent=1)


def test_the_fold_decides_as_recorded():
    text = encoded(fold_all())
    assert text == GOLDEN.read_text(), hashlib.sha256(text.encode()).hexdigest()


if __name__ == "__main__":  # re-record (only when a change of the fold's decisions is meant)
    GOLDEN.write_text(encoded(fold_all()))


def listed_end(state) -> int:
    """The board's end as the fold found it before (four listings per call), kept here as the reference."""
    def last(directory: str, depth: int) -> int:
        names = state.names(directory)
        if depth == 3:
            files = [n for n in names if n.endswith(".json")]
            return int(max(files)[:-5]) if files else 0
        for level in sorted((n for n in names if len(n) == 2 and n.isdigit()), reverse=True):
            found = last(f"{directory}/{level}", depth + 1)
            if found:
                return found
        return 0
    return last("board", 0)


POST = {"format": 1, "seq": 1, "broadcasts": 0}


@pytest.mark.parametrize("tree, overlay, edits", [
    ({}, {}, {}),
    ({3: POST, 250: POST}, {}, {}),
    ({3: POST, 250: POST}, {251: POST}, {}),
    ({3: POST, 250: POST}, {251: POST}, {252: POST, "board/readers/coder-1.json": {"format": 1}}),
    ({3: POST, 250: POST}, {250: None}, {}),  # the last post deleted: the one before is the end
    ({3: POST, 250: POST}, {}, {250: None}),
    ({3: POST, 1_000_000: POST}, {4: POST}, {5: POST}),  # writes below the end leave it
    ({3: POST, "board/00/00/00/9.json": POST}, {}, {4: POST}),  # a peer's odd name outranks a post
    ({3: POST, "board/00/00/01/x.txt": POST}, {}, {}),  # a folder with no post in it is passed over
    ({3: POST}, {"board/00/00/07/00000700.json/deeper.json": POST}, {}),
    ({}, {}, {"board/00/00/07/00000700.json": POST}),
])
def test_the_board_end_is_the_largest_path_as_listed(repo, tree, overlay, edits):
    from git_lanes.api import Lanes
    from git_lanes.domain.board_index import current_seq, post_path
    from git_lanes.ledger import Tx

    def paths(records: dict) -> dict:
        return {k if isinstance(k, str) else post_path(k): v for k, v in records.items()}

    lanes = Lanes(repo)
    lanes.claim_add(["src/**"], "coder-1")
    store = lanes.ctx.store
    base = store.tree_of(ledger.head(store))
    written = store.write_record_tree(base, {p: json.dumps(r).encode() for p, r in paths(tree).items()})
    state = State(store, at=Materialized(written, paths(overlay), 1))
    tx = Tx(state)
    for path, record in paths(edits).items():
        tx.delete(path) if record is None else tx.put(path, record)
    assert current_seq(state) == listed_end(state)
    assert current_seq(tx) == listed_end(tx)
    assert current_seq(State(store, at=Materialized(written, paths(overlay), 1))) == listed_end(state)  # remembered


@pytest.mark.parametrize("record", [
    {"format": 1, "agent": "coder-1", "cursor": 12, "inbox": [3, 4], "own": [], "lane": None, "until": 1.5,
     "nested": {"a": [1, {"b": True}], "text": "é\u2028\x00"}},
    {"format": 1, "pair": (1, 2)}, {"format": 1, 7: "a key that is not a string"},
    {"format": 1, "x": float("nan"), "y": float("inf")}, {"format": 1, "n": 10**30, "f": -0.0},
])
def test_an_ops_copy_of_a_record_is_the_json_round_trip(record):
    from git_lanes.ledger.state import _copy

    copy = _copy(record)
    assert json.dumps(copy) == json.dumps(json.loads(json.dumps(record)))
    assert [type(v) for v in copy.values()] == [type(v) for v in json.loads(json.dumps(record)).values()]
    if isinstance(copy.get("nested"), dict):
        copy["nested"]["a"].append(2)
        assert record["nested"]["a"] == [1, {"b": True}]
