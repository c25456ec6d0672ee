"""`Record`: the base of every frozen record the model defines, with one definition serving three uses.

A record is a frozen value class (`Frozen`, model/frozen.py) whose field types come from a small grammar: `str`, `int`, `float`, `bool`,
`None`, `X | None`, `Literal[...]`, `tuple[X, ...]`, `dict[str, X]`, `Any` (any JSON value), a `ValidatedStr`
id (`LaneName`, `AgentId`, ...), another `Record`, and `Annotated[X, Range(...)]` / `Annotated[str, Text(...)]`
for bounds. From the field types alone it

- validates on construction (types, ids, bounds, text rules), coercing lists to tuples and nested mappings to
  records, so a record that exists is valid (as git-revise's objects are);
- converts to and from JSON-shaped dicts (`to_dict` / `from_dict`), with field metadata for a JSON key that is
  a Python keyword (`key("from")`) or a key left out when empty (`omit="none"` / `omit="empty"`). `from_dict`
  refuses a key the record does not declare, so nothing our own code adds is dropped on the way to a face;
  `from_stored` reads what a repository holds, where a newer minor format version may have added keys an
  older reader ignores (DESIGN §1);
- describes itself as a JSON schema (`json_schema()`), from which the MCP tool schemas, the SDK's types and
  the HTTP OpenAPI document are derived, so no face restates a field.

A subclass adds cross-field rules in `check()`, run after the fields are validated."""

from __future__ import annotations

import contextvars
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeVar, Union

from git_lanes.errors import MalformedRecord, UserError
from git_lanes.model.frozen import MISSING, Frozen, dataclass_transform, field, fields
from git_lanes.model.ids import ValidatedStr
from git_lanes.model.text import check_text

R = TypeVar("R", bound="Record")
Omit = Literal["none", "empty"]


class Range(Frozen):
    """Bounds of a number field (inclusive)."""

    minimum: float | None = None
    maximum: float | None = None


class Text(Frozen):
    """A text field: `check_text`'s rules (valid Unicode, no control characters, one line unless
    `multiline`), at most `max_chars` characters or `max_bytes` bytes, refused with `code`."""

    code: str = "invalid_text"
    what: str | None = None
    multiline: bool = False
    max_chars: int | None = None
    max_bytes: int | None = None
    nonblank: bool = False
    blank_code: str | None = None


def key(name: str, *, omit: Omit | None = None, doc: str | None = None) -> Any:
    """A field stored under JSON key `name` (for keys that are Python keywords, like `from`)."""
    return field(metadata={"key": name, "omit": omit, "doc": doc})


def meta(*, omit: Omit | None = None, doc: str | None = None, default: Any = MISSING,
         default_factory: Any = MISSING) -> Any:
    """A field left out of `to_dict` when None (`omit="none"`) or empty (`omit="empty"`), with a description
    for the schema."""
    return field(default=default, default_factory=default_factory, metadata={"omit": omit, "doc": doc})


class _Spec(Frozen):
    name: str
    key: str
    type: Any
    omit: Omit | None
    doc: str | None
    required: bool


_SPECS: dict[type, tuple[_Spec, ...]] = {}
# Set while `from_stored` reads: nested records coerced on the way ignore unknown keys too.
_STORED: contextvars.ContextVar[bool] = contextvars.ContextVar("stored", default=False)


# How a value of a field type is checked and coerced: (value, where, owner) -> the field's value. Built from
# the type's grammar once per field of a record class (`_coercer`), so building a record never introspects a
# type again. Not shared between equal types: `Range(0)` equals `Range(0.0)`, but their errors differ.
Coercer = Callable[[Any, str, type], Any]
# Per record class: (field name, its JSON key, its coercer), in field order.
_PLANS: dict[type, tuple[tuple[str, str, Coercer], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, str, Coercer], ...]:
    plan = tuple((spec.name, spec.key, _coercer(spec.type)) for spec in _specs(cls))
    _PLANS[cls] = plan
    return plan


def _specs(cls: type) -> tuple[_Spec, ...]:
    found = _SPECS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        found = tuple(_Spec(f.name, f.metadata.get("key", f.name), hints[f.name], f.metadata.get("omit"),
                            f.metadata.get("doc"),
                            f.default is MISSING and f.default_factory is MISSING)
                      for f in fields(cls))
        _SPECS[cls] = found
    return found


@dataclass_transform(frozen_default=True, field_specifiers=(field, key, meta))
class Record(Frozen):
    """Base of the model's records (see the module's docstring)."""

    # The error code for a value of the wrong shape; a subclass may name its own.
    INVALID: ClassVar[str] = "invalid_record"
    # Keys `from_dict` accepts and drops without declaring them: every stored record's `format` version is
    # the business of the layer that stores it (DESIGN §1), not of the record.
    IGNORED: ClassVar[frozenset[str]] = frozenset({"format"})

    def __post_init__(self) -> None:
        owner = type(self)
        plan = _PLANS.get(owner) or _plan(owner)
        for name, where, coerce in plan:
            value = getattr(self, name)
            coerced = coerce(value, where, owner)
            if coerced is not value:
                object.__setattr__(self, name, coerced)
        self.check()

    def check(self) -> None:
        """Rules across fields; raise a LanesError to refuse the record."""

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-shaped data (what `--json` prints and what is stored)."""
        out: dict[str, Any] = {}
        for spec in _specs(type(self)):
            value = getattr(self, spec.name)
            if (spec.omit == "none" and value is None) or (spec.omit == "empty" and not value):
                continue
            out[spec.key] = _dump(value)
        return out

    # Records read like the JSON they print, too (`record["from"]`, `record.get("to_known")`, `"op" in
    # record`): code written against the dict results the API used to return keeps working. Values come
    # from `to_dict()`, so they compare equal to what `--json` shows; new code uses the attributes.
    def __getitem__(self, name: str) -> Any:
        return self.to_dict()[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.to_dict().get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.to_dict()

    def keys(self) -> Any:
        return self.to_dict().keys()

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record `to_dict` gave. A key it does not declare is refused (UserError), not dropped: a value
        our own code added to a result reaches no face unless its record says so."""
        if not isinstance(data, Mapping):
            raise UserError(f"{cls.__name__} must be a JSON object, got {type(data).__name__}", code=cls.INVALID)
        kwargs: dict[str, Any] = {}
        specs = _specs(cls)
        for spec in specs:
            if spec.key in data:
                kwargs[spec.name] = data[spec.key]
            elif spec.required:
                raise UserError(f"{cls.__name__} lacks {spec.key!r}", code=cls.INVALID)
        if len(kwargs) != len(data) and not _STORED.get():
            unknown = sorted(set(data) - {spec.key for spec in specs} - cls.IGNORED, key=str)
            if unknown:
                raise UserError(f"{cls.__name__} has no field {', '.join(map(repr, unknown))}", code=cls.INVALID)
        return cls(**kwargs)

    @classmethod
    def from_stored(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record as a repository holds it: like `from_dict`, but keys it does not know (from a newer
        minor version of the same format) are ignored, here and in the records nested in it."""
        token = _STORED.set(True)
        try:
            return cls.from_dict(data)
        finally:
            _STORED.reset(token)

    @classmethod
    def decode(cls: type[R], data: Any, what: str, hint: str | None = None) -> R:
        """A record a repository holds and a peer may have written with anything in it (their notes and
        ledger fast-forward as they are): `from_stored`, but a record of the wrong shape is the one error
        every reader sets aside, a MalformedRecord saying which record (`what`) and why."""
        try:
            return cls.from_stored(data)
        except MalformedRecord:
            raise
        except (UserError, TypeError, ValueError, RecursionError) as exc:
            reason = exc.message if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
            raise MalformedRecord(f"{what} is malformed: {reason}", hint=hint) from None

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """A JSON schema (draft 2020-12) of `to_dict`'s output and `from_dict`'s input."""
        properties: dict[str, Any] = {}
        required = []
        for spec in _specs(cls):
            schema = _schema(spec.type)
            if spec.doc:
                schema = {**schema, "description": spec.doc}
            properties[spec.key] = schema
            if spec.required and spec.omit is None:
                required.append(spec.key)
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        return {"type": "object", "title": cls.__name__, **({"description": " ".join(doc.split())} if doc else {}),
                "properties": properties, "required": required}


class Unreadable(Record):
    """A stored record set aside because it cannot be read (a peer's malformed note or ledger record), so
    that the rest still shows: where it is (`ref`, and the annotated commit or the ledger path as `key`) and
    why. `git lanes doctor` lists every one."""

    ref: str
    key: str
    reason: str
    transition: str | None = meta(omit="none", default=None,
                                  doc="the transition the note was for, from its state's commit message")
    lane: str | None = meta(omit="none", default=None, doc="the lane that state's commit message names")


class Listing(list[R]):
    """A listing's records, as a list, and the stored records it set aside because they cannot be read
    (`unreadable`): a face that can say so does (the CLI warns on stderr)."""

    def __init__(self, records: Iterable[R] = (), unreadable: Iterable[Mapping[str, Any]] = ()) -> None:
        super().__init__(records)
        self.unreadable = tuple(Unreadable.from_dict(u) for u in unreadable)


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


def _unwrap(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    if typing.get_origin(tp) is typing.Annotated:
        base, *extras = typing.get_args(tp)
        return base, tuple(extras)
    return tp, ()


def _fail(owner: type, where: str, expected: str, value: Any) -> UserError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    code = owner.INVALID if issubclass(owner, Record) else "invalid_record"
    return UserError(f"{owner.__name__}.{where} must be {expected}, got {shown}", code=code)


def _coercer(tp: Any) -> Coercer:
    base, extras = _unwrap(tp)
    coerce_base = _base_coercer(base)
    checks = tuple(extra for extra in extras if isinstance(extra, (Range, Text)))
    if not checks:
        return coerce_base

    def coerce(value: Any, where: str, owner: type) -> Any:
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
                           max_chars=extra.max_chars, max_bytes=extra.max_bytes)
        return value

    return coerce


def _is_union(origin: Any) -> bool:
    return origin is Union or origin is types.UnionType


def _base_coercer(tp: Any) -> Coercer:
    origin = typing.get_origin(tp)
    if tp is Any:
        return _as_is
    if tp is None or tp is type(None):
        return _null
    if _is_union(origin):
        return _union_coercer(tp)
    if origin is Literal:
        return _literal_coercer(typing.get_args(tp))
    if origin is tuple or origin is list:
        return _list_coercer(_coercer(typing.get_args(tp)[0]), origin is tuple)
    if origin is dict:
        return _dict_coercer(_coercer(typing.get_args(tp)[1]))
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
    choices = tuple(_coercer(option) for option in options if option is not type(None))
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
    if issubclass(tp, Record):
        return _record_coercer(tp)
    if issubclass(tp, ValidatedStr):
        return lambda value, where, owner: tp(value)
    return _PRIMITIVE_COERCERS.get(tp) or _unsupported(tp)


def _record_coercer(tp: type[Record]) -> Coercer:
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


def _describe(tp: Any) -> str:
    base, _ = _unwrap(tp)
    return getattr(base, "__name__", str(base))


def _schema(tp: Any) -> dict[str, Any]:
    base, extras = _unwrap(tp)
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
    if _is_union(origin):
        return {"anyOf": [_schema(o) for o in typing.get_args(tp)]}
    if origin is Literal:
        return {"enum": list(typing.get_args(tp))}
    if origin is tuple or origin is list:
        return {"type": "array", "items": _schema(typing.get_args(tp)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(typing.get_args(tp)[1])}
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.json_schema()
    if isinstance(tp, type) and issubclass(tp, ValidatedStr):
        return dict(tp.JSON_SCHEMA)
    raise TypeError(f"unsupported field type {tp!r}")


def schema_of(tp: Any) -> dict[str, Any]:
    """The JSON schema of a field type of the grammar above (for a face deriving an argument's schema)."""
    return _schema(tp)



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
    if _is_union(typing.get_origin(returns)) and options and all(_publishes(o) for o in options):
        return {"type": "object", "title": "Or".join(o.__name__ for o in options),
                "anyOf": [o.json_schema() for o in options]}
    if typing.get_origin(returns) in (list, tuple) and options:
        items = result_schema(options[0])
        return None if items is None else {"type": "array", "items": items}
    return None
