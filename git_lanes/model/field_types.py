"""The field grammar of `Record` (model/record.py): which types a record's fields may have, and for each one
the coercer that checks and coerces a value of it, built once per field.

The grammar: `str`, `int`, `float`, `bool`, `None`, `X | None`, `Literal[...]`, `tuple[X, ...]`, `list[X]`,
`dict[str, X]`, `Any` (any JSON value), a `ValidatedStr` id (`LaneName`, `AgentId`, ...), a record (a class
with `from_dict`, so a nested mapping becomes one), and `Annotated[X, Range(...)]` / `Annotated[str, Text(...)]`
for bounds. model/schema.py describes the same grammar as JSON schemas."""

from __future__ import annotations

import math
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from git_lanes.errors import UserError
from git_lanes.model.frozen import Frozen
from git_lanes.model.ids import ValidatedStr
from git_lanes.model.text import check_text, name_problem


class Range(Frozen):
    """Bounds of a number field (inclusive)."""

    minimum: float | None = None
    maximum: float | None = None


class Text(Frozen):
    """A text field: `check_text`'s rules (valid Unicode, no control characters, one line unless
    `multiline`, a name's characters if `name`), at most `max_chars` characters or `max_bytes` bytes,
    refused with `code`."""

    code: str = "invalid_text"
    what: str | None = None
    multiline: bool = False
    max_chars: int | None = None
    max_bytes: int | None = None
    nonblank: bool = False
    blank_code: str | None = None
    name: bool = False


# How a value of a field type is checked and coerced: (value, where, owner) -> the field's value. Built from
# the type's grammar once per field of a record class (`coercer`), so building a record never introspects a
# type again. Not shared between equal types: `Range(0)` equals `Range(0.0)`, but their errors differ.
Coercer = Callable[[Any, str, type], Any]


def unwrap(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    """`Annotated[X, extras...]` as (X, extras); any other type as (type, ())."""
    if typing.get_origin(tp) is typing.Annotated:
        base, *extras = typing.get_args(tp)
        return base, tuple(extras)
    return tp, ()


def _fail(owner: type, where: str, expected: str, value: Any) -> UserError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    code = getattr(owner, "INVALID", "invalid_record")  # a record names the code of its own wrong shapes
    return UserError(f"{owner.__name__}.{where} must be {expected}, got {shown}", code=code)


def coercer(tp: Any) -> Coercer:
    """The coercer of field type `tp` (TypeError, when used, for a type outside the grammar)."""
    base, extras = unwrap(tp)
    coerce_base = _base_coercer(base)
    checks = tuple(extra for extra in extras if isinstance(extra, (Range, Text)))
    if not checks:
        return coerce_base

    def checked(value: Any, where: str, owner: type) -> Any:
        value = coerce_base(value, where, owner)
        if value is None:
            return value
        for extra in checks:
            if isinstance(extra, Range):
                if (extra.minimum is not None and value < extra.minimum) or \
                        (extra.maximum is not None and value > extra.maximum):
                    raise _fail(owner, where, f"between {extra.minimum} and {extra.maximum}", value)
            else:
                what = extra.what or f"the {where.replace('_', ' ')}"
                if extra.nonblank and not value.strip():
                    raise UserError(f"{what} must not be empty", code=extra.blank_code or extra.code)
                check_text(value, what, code=extra.code, multiline=extra.multiline,
                           max_chars=extra.max_chars, max_bytes=extra.max_bytes, name=extra.name)
        return value

    return _passing(coerce_base, checks, checked) or checked


def _passing(coerce_base: Coercer, checks: tuple[Range | Text, ...], checked: Coercer) -> Coercer | None:
    """`checked` behind a test that passes the common value at once: a float or int of its exact type within
    its bounds, a printable text within its length. Whatever the test does not pass (including every value
    `checked` refuses) goes to `checked` itself, for its answer or its error. None for other bounds."""
    if len(checks) != 1:
        return None
    extra = checks[0]
    if isinstance(extra, Range) and coerce_base in (_int, _float):
        exact = int if coerce_base is _int else float
        # a float past the largest finite one (inf) or no number at all (nan) fails the test: _float's to refuse
        low = -sys.float_info.max if extra.minimum is None else extra.minimum
        high = sys.float_info.max if extra.maximum is None else extra.maximum

        def in_range(value: Any, where: str, owner: type) -> Any:
            if type(value) is exact and low <= value <= high:
                return value
            return checked(value, where, owner)

        return in_range
    if isinstance(extra, Text) and coerce_base is _str:
        chars = sys.maxsize if extra.max_chars is None else extra.max_chars
        # a character is at most four bytes in UTF-8: a text this short is within `max_bytes` whatever it holds
        short = sys.maxsize if extra.max_bytes is None else extra.max_bytes // 4
        limit = min(chars, short)
        nonblank, name = extra.nonblank, extra.name

        def printable(value: Any, where: str, owner: type) -> Any:
            # printable: no control character, no lone surrogate, no line break (check_text's own first test)
            if type(value) is str and len(value) <= limit and value.isprintable() \
                    and (not nonblank or value.strip()) and (not name or name_problem(value) is None):
                return value
            return checked(value, where, owner)

        return printable
    return None


def admits_null(tp: Any) -> bool:
    """Whether null is a valid value of field type `tp` as it is (its coercer returns None for None): `Any`,
    `None`, and a union with `None`, bounds or not."""
    base, _ = unwrap(tp)
    if base is Any or base is None or base is type(None):
        return True
    return is_union(typing.get_origin(base)) and type(None) in typing.get_args(base)


def is_union(origin: Any) -> bool:
    return origin is Union or origin is types.UnionType


def _base_coercer(tp: Any) -> Coercer:
    origin = typing.get_origin(tp)
    if tp is Any:
        return _as_is
    if tp is None or tp is type(None):
        return _null
    if is_union(origin):
        return _union_coercer(tp)
    if origin is Literal:
        return _literal_coercer(typing.get_args(tp))
    if origin is tuple or origin is list:
        return _list_coercer(coercer(typing.get_args(tp)[0]), origin is tuple)
    if origin is dict:
        return _dict_coercer(coercer(typing.get_args(tp)[1]))
    if isinstance(tp, type):
        return _class_coercer(tp)
    return _unsupported(tp)


def _as_is(value: Any, where: str, owner: type) -> Any:
    return value


def _null(value: Any, where: str, owner: type) -> Any:
    if value is not None:
        raise _fail(owner, where, "null", value)
    return None


def _union_coercer(tp: Any) -> Coercer:
    options = typing.get_args(tp)
    nullable = type(None) in options
    choices = tuple(coercer(option) for option in options if option is not type(None))
    expected = " or ".join(_describe(o) for o in options)

    def coerce(value: Any, where: str, owner: type) -> Any:
        if value is None and nullable:
            return None
        problems = []
        for choice in choices:
            try:
                return choice(value, where, owner)
            except UserError as exc:
                problems.append(exc)
        if len(problems) == 1:
            raise problems[0]
        raise _fail(owner, where, expected, value)

    if len(choices) == 1 and choices[0] in _AS_IS:  # `X | None`: a value of X's exact type is X's, as it is
        _AS_IS[coerce] = _AS_IS[choices[0]]
    return coerce


def _literal_coercer(allowed: tuple[Any, ...]) -> Coercer:
    expected = "one of " + ", ".join(map(repr, allowed))

    def coerce(value: Any, where: str, owner: type) -> Any:
        if value not in allowed or isinstance(value, bool):
            raise _fail(owner, where, expected, value)
        return value

    return coerce


def _list_coercer(item: Coercer, as_tuple: bool) -> Coercer:
    # A list of plain ints or texts (a reader's inbox, read on every board op, grows to hundreds) is checked
    # by type alone; an item of any other type goes through `item`, which accepts it or names its place.
    exact = _EXACT_TYPES.get(item)

    def coerce(value: Any, where: str, owner: type) -> Any:
        if not value and type(value) is list:  # most lists of a record read back are empty
            return () if as_tuple else []
        if not isinstance(value, (list, tuple)):
            raise _fail(owner, where, "a list", value)
        if exact is not None and all(type(v) is exact for v in value):
            return tuple(value) if as_tuple else list(value)
        items = tuple(item(v, f"{where}[{i}]", owner) for i, v in enumerate(value))
        return items if as_tuple else list(items)

    return coerce


def _dict_coercer(item: Coercer) -> Coercer:
    def coerce(value: Any, where: str, owner: type) -> Any:
        if not isinstance(value, Mapping):
            raise _fail(owner, where, "an object", value)
        return {_key(k, where, owner): item(v, f"{where}.{k}", owner) for k, v in value.items()}

    return coerce


def _unsupported(tp: Any) -> Coercer:
    def coerce(value: Any, where: str, owner: type) -> Any:
        raise TypeError(f"{owner.__name__}.{where}: unsupported field type {tp!r}")  # a bug in a record's definition

    return coerce


def _key(k: Any, where: str, owner: type) -> str:
    if not isinstance(k, str):
        raise _fail(owner, where, "an object with text keys", k)
    return k


def _class_coercer(tp: type) -> Coercer:
    if callable(getattr(tp, "from_dict", None)):  # a record, or a class of its own that reads itself
        return _record_coercer(tp)
    if issubclass(tp, ValidatedStr):
        def coerce(value: Any, where: str, owner: type) -> Any:
            return tp(value)

        _AS_IS[coerce] = tp  # an instance of `tp` was checked when it was built: `tp(value)` is `value`
        return coerce
    return _PRIMITIVE_COERCERS.get(tp) or _unsupported(tp)


def _record_coercer(tp: Any) -> Coercer:
    def coerce(value: Any, where: str, owner: type) -> Any:
        if isinstance(value, tp):
            return value
        if isinstance(value, Mapping):
            return tp.from_dict(value)
        raise _fail(owner, where, f"a {tp.__name__}", value)

    return coerce


def _bool(value: Any, where: str, owner: type) -> Any:
    if not isinstance(value, bool):
        raise _fail(owner, where, "true or false", value)
    return value


def _int(value: Any, where: str, owner: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(owner, where, "an integer", value)
    return value


def _float(value: Any, where: str, owner: type) -> Any:
    # an int stays an int: converting would change what --json prints (1 vs 1.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(owner, where, "a finite number", value)
    return value


def _str(value: Any, where: str, owner: type) -> Any:
    if not isinstance(value, str):
        raise _fail(owner, where, "text", value)
    return value


_PRIMITIVE_COERCERS: dict[type, Coercer] = {bool: _bool, int: _int, float: _float, str: _str}
# The coercers that return a value of exactly this type as it is, and accept no other value of it.
_EXACT_TYPES: dict[Coercer, type] = {_bool: bool, _int: int, _str: str}
# The coercers that return a value of exactly this type as it is: the primitives', and each id class's.
_AS_IS: dict[Coercer, type] = dict(_EXACT_TYPES)


def exact_type(coerce: Coercer) -> type | None:
    """The type whose every value `coerce` returns unchanged (so a caller need not call it for one), if any."""
    return _AS_IS.get(coerce)


def _describe(tp: Any) -> str:
    base, _ = unwrap(tp)
    return getattr(base, "__name__", str(base))
