"""`json.loads`, and `json.dumps` without an indent, through the standard library's own C accelerator (`_json`)
rather than the `json` package, whose import loads `re` and compiles five regular expressions that its C
scanner and encoder never use: ~4 ms, nearly 8% of a light sync's process (issue 15), and the same again at
every other command's start.

What comes out is json's own: the same scanner and encoder `json` calls, with the settings json's defaults
give them. Whatever the accelerator does not settle alone goes to `json` itself: an error (so its message and
position are json's), bytes in UTF-16 or UTF-32 or after a byte-order mark, an indent."""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"  # what json skips around a document


class _Decoding:
    """What `_json.make_scanner` reads from the `json.JSONDecoder()` that `json.loads` uses."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


# `scan(text, index)` -> (value, end): the value that starts at `index`, as json reads it; StopIteration when
# none starts there. What the ledger's readers call to read a value in place, without copying its line out.
scan: Callable[[str, int], tuple[Any, int]] = _json.make_scanner(_Decoding())  # type: ignore[arg-type]


def loads(text: str | bytes | bytearray) -> Any:
    """`json.loads(text)`."""
    if not isinstance(text, str):
        if text[:1] in (b"\xef", b"\xfe", b"\xff") or b"\x00" in text[:4]:  # json detects an encoding here
            return _json_module().loads(text)
        try:
            text = bytes(text).decode("utf-8", "surrogatepass")  # json's decoding of UTF-8 without a mark
        except UnicodeDecodeError:
            return _json_module().loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = scan(text, start)
    except StopIteration:
        return _json_module().loads(text)  # raises json's error
    if end != len(text) and text[end:].strip(_WHITESPACE):
        return _json_module().loads(text)  # "Extra data", from json
    return value


def dumps(value: Any, *, sort_keys: bool = False, separators: tuple[str, str] | None = None,
          ensure_ascii: bool = True, default: Callable[[Any], Any] | None = None,
          indent: int | None = None) -> str:
    """`json.dumps(value, ...)` with these arguments (and json's defaults for the others)."""
    if indent is not None:  # json's pure-Python encoder writes indented text: json's own to call
        return str(_json_module().dumps(value, sort_keys=sort_keys, separators=separators,
                                        ensure_ascii=ensure_ascii, default=default, indent=indent))
    item_separator, key_separator = separators or (", ", ": ")
    # A new encoder each call, as json makes one: its record of the containers it is inside (circular
    # references) is left behind by an encoding that fails.
    encode = _json.make_encoder({}, default or _unserializable,
                                _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring,
                                None, key_separator, item_separator, sort_keys, False, True)
    return "".join(encode(value, 0))


def _unserializable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _json_module() -> Any:
    import json

    return json
