"""model/jsontext.py reads and writes JSON exactly as the `json` package does (the ledger's commits are written
with it, byte for byte as before), and refuses what json refuses with json's own error."""

from __future__ import annotations

import json
import math
import random

import pytest

from git_lanes.model import jsontext

TEXTS = ["", "plain", "é and ü", "tab\there", "line\nbreak", "\x00\x1f\x7f", "\u2028\u2029", "\ud800 lone",
         "emoji \U0001f600", '"quoted" \\ back', "</script>"]
NUMBERS = [0, -1, 1 << 70, -(1 << 70), 0.1, -0.0, 1e16, 1.5e-300, 1e308, 123456789.125, math.inf, -math.inf]


def random_value(chooser: random.Random, depth: int = 0) -> object:
    kind = chooser.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return chooser.choice(TEXTS)
    if kind == 1:
        return chooser.choice(NUMBERS)
    if kind == 2:
        return chooser.choice([None, True, False])
    if kind == 3:
        return chooser.randrange(-1000, 1000)
    if kind == 4:
        return chooser.random() * 10 ** chooser.randrange(-5, 20)
    if kind == 5:
        return [random_value(chooser, depth + 1) for _ in range(chooser.randrange(4))]
    if kind == 6:
        return tuple(random_value(chooser, depth + 1) for _ in range(chooser.randrange(3)))
    return {chooser.choice(TEXTS + ["a", "b", "z"]): random_value(chooser, depth + 1)
            for _ in range(chooser.randrange(5))}


@pytest.mark.parametrize("options", [
    {}, {"sort_keys": True}, {"sort_keys": True, "ensure_ascii": False}, {"separators": (",", ":")},
    {"sort_keys": True, "separators": (",", ":")}, {"indent": 2, "sort_keys": True}, {"default": str}])
def test_what_it_writes_is_what_json_writes(options):
    chooser = random.Random(str(options))
    for _ in range(1500):
        value = random_value(chooser)
        written = jsontext.dumps(value, **options)
        assert written == json.dumps(value, **options)
        assert jsontext.loads(written) == json.loads(written) or written.count("NaN")


def test_what_json_cannot_write_fails_alike():
    for value, options in (({1: {2}}, {}), ([object()], {}), ({(1, 2): 3}, {}), ({"a": 1, 2: 3}, {"sort_keys": True})):
        with pytest.raises(TypeError) as ours:
            jsontext.dumps(value, **options)
        with pytest.raises(TypeError) as theirs:
            json.dumps(value, **options)
        assert str(ours.value) == str(theirs.value)
    circular: list = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference"):
        jsontext.dumps(circular)
    assert jsontext.dumps([{}, []]) == "[{}, []]"  # a failed encoding leaves nothing behind for the next


@pytest.mark.parametrize("text", [
    '{"a": 1}', '  [1, 2.5, "x"]\n', "\t\r\n null \n", '"\\ud800"', "NaN", "-Infinity", '{"a": [] }',
    b'{"bytes": "\xc3\xa9"}', bytearray(b"[1]"), '{"a": "\u00e9\\u00e9"}',
    # refused, each with json's own error
    "", "   ", "{", '{"a": 1} x', '{"a": 1}{}', "\ufeff{}", "[1,]", '"\x01"', "01", "tru", '{"a" 1}',
    b"\xff\xfe{\x00}\x00", b"\xef\xbb\xbf[1]", "[1, 2]\x00", b"\x80", b'["\xed\xa0\x80"]', "1e999", "-",
    "[" * 100_000])
def test_what_it_reads_is_what_json_reads(text):
    try:
        expected: object = json.loads(text)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)) as raised:
            jsontext.loads(text)
        assert str(raised.value) == str(exc)
    else:
        read = jsontext.loads(text)
        assert read == expected or (isinstance(read, float) and math.isnan(read))
        assert type(read) is type(expected)


def test_scan_reads_a_value_in_place_as_json_scans_it():
    message = 'summary\n\n{"id": "0123456789abcdef", "n": [1, 2]}\n{"edits": {}}\n'
    value, end = jsontext.scan(message, message.index("{"))
    assert value == {"id": "0123456789abcdef", "n": [1, 2]} and message[end] == "\n"
    with pytest.raises(StopIteration):
        jsontext.scan(message, 0)
