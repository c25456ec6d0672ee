"""The ledger's record encoder writes exactly what `json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`
writes (plus a newline), so records, trees and commits stay byte for byte what they were; and it refuses
what `json.dumps` refuses, with the same error."""

from __future__ import annotations

import enum
import json

import pytest

from git_lanes.ledger.record_json import encode_record


class Level(enum.IntEnum):
    HIGH = 3


def reference(value: object) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


VALUES = [
    {}, [], "", 0, None, True, -1.5, 10 ** 30, float("nan"), float("inf"), float("-inf"), 1e-7, Level.HIGH,
    {"format": 1, "title": "ünïcode ✓ \u2028 \"quoted\" back\\slash\ttab\nnew\x00line\x7f", "b": [], "a": {},
     "nested": {"list": [1, 2.5, [], {}, [None, False, {"z": (1, 2)}]], "empty": ""}, "emoji": "🦊"},
    {3: "int key", 2.5: "float key", True: "bool key", -7: "negative"}, {None: "null key"},
    {"tuple": (), "deep": [[[[{"x": [1]}]]]], "big": 2 ** 70, "neg0": -0.0},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_records_are_encoded_as_json_dumps_encodes_them(value):
    assert encode_record(value) == reference(value)


@pytest.mark.parametrize("value", [{"a": object()}, [{1, 2}], {("tuple",): 1}, {"a": 1, 2: "mixed keys"},
                                   {"lone": "\ud800"}],
                         ids=["object", "set", "tuple key", "unsortable keys", "lone surrogate"])
def test_what_json_refuses_is_refused_with_its_error(value):
    with pytest.raises(Exception) as expected:
        reference(value)
    with pytest.raises(type(expected.value)) as ours:
        encode_record(value)
    assert str(ours.value) == str(expected.value)


def test_a_circular_record_is_refused():
    record: dict = {"a": []}
    record["a"].append(record)
    with pytest.raises(ValueError, match="Circular reference detected"):
        encode_record(record)


@pytest.mark.parametrize("depth", [600, 601, 5000])
def test_a_record_nested_as_deep_as_json_writes_is_written_or_refused_as_json_does(depth):
    """This encoder takes two frames a level where json's takes one: a record nested past half the recursion
    limit, which json writes, is written here too (its bytes), and one json refuses is refused as json does."""
    record: object = 1
    for _ in range(depth):
        record = [record] if depth % 2 else {"k": record}
    try:
        expected = reference(record)
    except RecursionError:
        with pytest.raises(RecursionError):
            encode_record(record)
    else:
        assert depth < 1000  # the precondition: json wrote it, at a depth past our own frames' reach
        assert encode_record(record) == expected


def test_a_flat_record_is_encoded_in_one_call_of_the_c_encoder_as_json_dumps_encodes_it():
    """A record whose values are all leaves or empty containers (most of the ledger's: a post, a read position,
    an agent, a task without dependencies or files) is written by the standard library's C encoder in one
    call, no Python function per value: byte for byte json's indented text, for every kind of leaf."""
    import random
    import sys

    from git_lanes.ledger import record_json
    from git_lanes.model.ids import AgentId

    leaves = ["", "plain", "ünïcode ✓ \u2028", "\"quoted\" back\\slash\ttab\nnew\x00line\x7f", "🦊", AgentId("coder-1"),
              0, -1, 10 ** 30, True, False, None, 1.5, -0.0, 1796165732.276, 1e-7, float("nan"), float("inf"),
              float("-inf"), Level.HIGH, [], (), {}]
    keys = ["a", "b", "format", "ünï", "", "z" * 40, "\x01"]
    chooser = random.Random(15)
    records = [{key: chooser.choice(leaves) for key in chooser.sample(keys, chooser.randint(1, len(keys)))}
               for _ in range(2000)]
    records += [{3: "int key", 2.5: "float key", True: "bool key", -7: "negative"}, {None: "null key"}]
    calls: list[str] = []

    def count(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == record_json.__file__:
            calls.append(frame.f_code.co_name)

    for record in records:
        sys.setprofile(count)
        try:
            encoded = encode_record(record)
        finally:
            sys.setprofile(None)
        assert encoded == reference(record), record
    assert set(calls) == {"encode_record", "_flat"}
    nested = {"files": ["src/**"], "format": 1}
    assert encode_record(nested) == reference(nested)  # not flat: the recursive encoder's
