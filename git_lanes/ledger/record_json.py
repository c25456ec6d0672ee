"""A ledger record as the ledger stores it: `json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False)`
and a newline, byte for byte, at a third of the cost.

The standard library's C encoder does not indent, so an indented dump runs its pure-Python generator
encoder, every value a few generator hops: about 50 µs for a task record, twice per op. This writes the same
text with one recursive function over the same leaf encoders (the C string escaper, `int.__repr__`,
`float.__repr__`), in the same order, with the same errors: keys sorted before they are converted, non-string
keys converted as `json` converts them, a circular container refused, anything else not JSON refused."""

from __future__ import annotations

from json.encoder import INFINITY, encode_basestring

import _json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INDENT = "  "

# A flat record (`_flat`) indented is its compact JSON with ",\n  " between its items: what the standard
# library's C encoder writes in one call, given that separator, with json's own sorting, key conversion, leaf
# encoders and errors (no circular check: a flat record holds no container to come back to). Most ledger
# records are flat (a post, a read position, an agent, a task without dependencies or files), and a
# checkpoint writes one of each path its last 31 ops wrote.
def _unserializable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


_encode_flat = _json.make_encoder(None, _unserializable, encode_basestring, None, ": ", ",\n" + INDENT, True,
                                  False, True)
_LEAVES = (str, int, float)
_EMPTIES = (list, tuple, dict)


def _flat(record: dict[Any, Any]) -> bool:
    """Whether every value of `record` is a string, a number, a bool, null or an empty list or object."""
    for value in record.values():
        if not (value is None or isinstance(value, _LEAVES) or (isinstance(value, _EMPTIES) and not value)):
            return False
    return True


def encode_record(record: Any) -> bytes:
    if type(record) is dict and record and _flat(record):
        text = "".join(_encode_flat(record, 0))
        return f"{{\n{INDENT}{text[1:-1]}\n}}\n".encode()
    parts: list[str] = []
    try:
        _value(record, "\n", parts, {})
    except RecursionError:
        # Two frames a level here, one in json's encoder: a record nested past half the recursion limit is
        # json's to write (the same bytes) or to refuse (its own error), as it was before this encoder.
        import json

        return (json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    parts.append("\n")
    return "".join(parts).encode()


def _float(value: float, _repr: Any = float.__repr__) -> str:
    if value != value:
        return "NaN"
    if value == INFINITY:
        return "Infinity"
    if value == -INFINITY:
        return "-Infinity"
    text: str = _repr(value)
    return text


def _value(value: Any, newline: str, parts: list[str], markers: dict[int, Any],
           _string: Any = encode_basestring, _int: Any = int.__repr__) -> None:
    if isinstance(value, str):
        parts.append(_string(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(_int(value))
    elif isinstance(value, float):
        parts.append(_float(value))
    elif isinstance(value, (list, tuple)):
        _container(value, "[]", False, newline, parts, markers)
    elif isinstance(value, dict):
        _container(value, "{}", True, newline, parts, markers)
    else:
        _unserializable(value)


def _container(value: Any, brackets: str, keyed: bool, newline: str, parts: list[str], markers: dict[int, Any],
               _string: Any = encode_basestring) -> None:
    if not value:
        parts.append(brackets)
        return
    if id(value) in markers:
        raise ValueError("Circular reference detected")
    markers[id(value)] = value
    inner = newline + INDENT
    separator = brackets[0] + inner
    for entry in sorted(value.items()) if keyed else value:
        parts.append(separator)
        separator = "," + inner
        if keyed:
            key, entry = entry
            parts.append(_string(key if isinstance(key, str) else _key(key)))
            parts.append(": ")
        _value(entry, inner, parts, markers)
    parts.append(newline + brackets[1])
    del markers[id(value)]


def _key(key: Any) -> str:
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        text: str = int.__repr__(key)
        return text
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
