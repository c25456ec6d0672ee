"""JSON schemas (draft 2020-12) of the field grammar (model/field_types.py): what `Record.json_schema()`
says of each field, and what the faces that publish schemas (MCP tool outputs, the OpenAPI document) say of
an API method's result. A record describes itself (`json_schema()`); this module describes the types around
it."""

from __future__ import annotations

import typing
from typing import Any, Literal

from git_lanes.model.field_types import Range, Text, is_union, unwrap
from git_lanes.model.ids import ValidatedStr


def schema_of(tp: Any) -> dict[str, Any]:
    """The JSON schema of a field type of the grammar (a record's field, or a face deriving an argument's)."""
    base, extras = unwrap(tp)
    schema = dict(_schema_base(base))
    for extra in extras:
        if isinstance(extra, Range):
            if extra.minimum is not None:
                schema["minimum"] = extra.minimum
            if extra.maximum is not None:
                schema["maximum"] = extra.maximum
        elif isinstance(extra, Text):
            if extra.max_chars is not None:
                schema["maxLength"] = extra.max_chars
            if extra.nonblank:
                schema["minLength"] = 1
    return schema


_PRIMITIVES: dict[Any, dict[str, Any]] = {str: {"type": "string"}, int: {"type": "integer"},
                                          float: {"type": "number"}, bool: {"type": "boolean"},
                                          type(None): {"type": "null"}, None: {"type": "null"}}


def _schema_base(tp: Any) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if tp is Any:
        return {}
    if tp in _PRIMITIVES:
        return _PRIMITIVES[tp]
    if is_union(origin):
        return {"anyOf": [schema_of(o) for o in typing.get_args(tp)]}
    if origin is Literal:
        return {"enum": list(typing.get_args(tp))}
    if origin is tuple or origin is list:
        return {"type": "array", "items": schema_of(typing.get_args(tp)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": schema_of(typing.get_args(tp)[1])}
    if _publishes(tp):
        published: dict[str, Any] = tp.json_schema()
        return published
    if isinstance(tp, type) and issubclass(tp, ValidatedStr):
        return dict(tp.JSON_SCHEMA)
    raise TypeError(f"unsupported field type {tp!r}")


def _publishes(tp: Any) -> bool:
    """A class that describes its JSON itself: a record (or a face's own class with `json_schema()`)."""
    return isinstance(tp, type) and callable(getattr(tp, "json_schema", None))


def result_schema(returns: Any) -> dict[str, Any] | None:
    """The JSON schema of what an API method says it returns, for the faces that publish one (MCP tool output
    schemas, the OpenAPI document): a record's own, an object that is one of several records (a union), or an
    array of records. None when the annotation names no record: the face then publishes a generic shape."""
    if _publishes(returns):
        schema: dict[str, Any] = returns.json_schema()
        return schema
    options = typing.get_args(returns)
    if is_union(typing.get_origin(returns)) and options and all(_publishes(o) for o in options):
        return {"type": "object", "title": "Or".join(o.__name__ for o in options),
                "anyOf": [o.json_schema() for o in options]}
    if typing.get_origin(returns) in (list, tuple) and options:
        items = result_schema(options[0])
        return None if items is None else {"type": "array", "items": items}
    return None
