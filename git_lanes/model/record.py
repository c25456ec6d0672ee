"""`Record`: the base of every frozen record the model defines, with one definition serving three uses.

A record is a frozen value class (`Frozen`, model/frozen.py) whose field types come from a small grammar
(model/field_types.py: primitives, unions, literals, lists, dicts, ids, other records, and `Range` / `Text`
bounds). From the field types alone it

- validates on construction (types, ids, bounds, text rules), coercing lists to tuples and nested mappings to
  records, so a record that exists is valid (as git-revise's objects are);
- converts to and from JSON-shaped dicts (`to_dict` / `from_dict`), with field metadata for a JSON key that is
  a Python keyword (`key("from")`) or a key left out when empty (`omit="none"` / `omit="empty"`). `from_dict`
  refuses a key the record does not declare, so nothing our own code adds is dropped on the way to a face;
  `from_stored` reads what a repository holds, where a newer minor format version may have added keys an
  older reader ignores (DESIGN §1);
- describes itself as a JSON schema (`json_schema()`, model/schema.py), from which the MCP tool schemas,
  the SDK's types and the HTTP OpenAPI document are derived, so no face restates a field.

A subclass adds cross-field rules in `check()`, run after the fields are validated."""

from __future__ import annotations

import contextvars
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeVar

from git_lanes.errors import MalformedRecord, UserError
from git_lanes.model.field_types import Coercer, admits_null, coercer, exact_type
from git_lanes.model.frozen import FIRST_USES, MISSING, Frozen, dataclass_transform, field, fields
from git_lanes.model.ids import ValidatedStr

R = TypeVar("R", bound="Record")
Omit = Literal["none", "empty"]


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

# Per record class: (field name, its JSON key, its coercer, whether its type admits null), in field order.
# A null where the type admits one is valid as it is: the coercer is not called (most optional fields of a
# record read back are null, and a call per field was most of building one).
_PLANS: dict[type, tuple[tuple[str, str, Coercer, bool], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, str, Coercer, bool], ...]:
    plan = tuple((spec.name, spec.key, coercer(spec.type), admits_null(spec.type)) for spec in _specs(cls))
    _PLANS[cls] = plan
    return plan


# Per record class: its fields' checks compiled into one function (`_compiled`), once the class has been built
# FIRST_USES times through the plan's loop: a long-lived process (a held-open ledger append decodes three
# records and builds one per op) pays no loop, no `getattr` and no call per field whose value is of its exact
# type already; a short command compiles none.
_VALIDATORS: dict[type, Callable[[Any], None]] = {}
_USES: dict[type, int] = {}


def _compiled(cls: type) -> Callable[[Any], None] | None:
    """What `Record.__post_init__` does for an instance of exactly `cls`, as one function: the same coercers
    in the same order, so the same values and the same errors; a field whose value has the type its
    coercer returns as it is (`exact_type`) is not passed to it. None where the fields are not plain
    entries of the instance's dict (a class with __slots__ or a descriptor for a field)."""
    plan = _PLANS.get(cls) or _plan(cls)
    if any("__slots__" in k.__dict__ for k in cls.__mro__) or any(
            hasattr(k.__dict__.get(name), "__set__") for name, *_ in plan for k in cls.__mro__):
        return None
    namespace: dict[str, Any] = {"__owner": cls}
    body = ["  __fields = self.__dict__"]
    for number, (name, where, coerce, nullable) in enumerate(plan):
        namespace[f"__coerce_{number}"] = coerce
        exact = exact_type(coerce)
        test = []
        if nullable:
            test.append("__value is not None")
        if exact is not None:
            namespace[f"__exact_{number}"] = exact
            test.append(f"type(__value) is not __exact_{number}")
        body.append(f"  __value = __fields[{name!r}]")
        indent = "  "
        if test:
            body.append(f"  if {' and '.join(test)}:")
            indent = "    "
        if exact is not None and issubclass(exact, ValidatedStr):
            # an id read back: a text its class already found valid is its instance, without a call
            namespace[f"__known_{number}"] = exact.known_texts()
            body.append(f"{indent}__coerced = __known_{number}.get(__value) if type(__value) is str else None")
            body.append(f"{indent}if __coerced is None:")
            indent += "  "
        body.append(f"{indent}__coerced = __coerce_{number}(__value, {where!r}, __owner)")
        body.append(f"{indent}if __coerced is not __value:")
        body.append(f"{indent}  __fields[{name!r}] = __coerced")
        if exact is not None and issubclass(exact, ValidatedStr):
            body.append(f"{indent[:-2]}else:")
            body.append(f"{indent}__fields[{name!r}] = __coerced")
    if getattr(cls, "check") is not Record.check:
        body.append("  self.check()")
    source = "def __validate(self):\n" + "\n".join(body) + "\n"
    exec(source, namespace)  # noqa: S102 - source built from the class's own field names
    validate: Callable[[Any], None] = namespace["__validate"]
    validate.__qualname__ = f"{cls.__qualname__}.__post_init__"
    return validate


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
        validate = _VALIDATORS.get(owner)
        if validate is not None:
            validate(self)
            return
        uses = _USES[owner] = _USES.get(owner, 0) + 1
        if uses >= FIRST_USES:
            validate = _compiled(owner)
            if validate is not None:
                _VALIDATORS[owner] = validate
        plan = _PLANS.get(owner) or _plan(owner)
        for name, where, coerce, nullable in plan:
            value = getattr(self, name)
            if value is None and nullable:
                continue
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
        read = _READERS.get(cls)
        if read is not None:
            return read(data)  # type: ignore[no-any-return]
        uses = _READS[cls] = _READS.get(cls, 0) + 1
        if uses >= FIRST_USES:
            _READERS[cls] = _reader(cls)
        if not isinstance(data, Mapping):
            _refused(cls, data)
        kwargs: dict[str, Any] = {}
        for spec in _specs(cls):
            if spec.key in data:
                kwargs[spec.name] = data[spec.key]
            elif spec.required:
                _refused(cls, data, lacks=spec.key)
        if len(kwargs) != len(data) and not _STORED.get():
            _refused(cls, data, undeclared=True)
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

    @staticmethod
    def reading_stored() -> bool:
        """Whether a record is being built from what a repository holds (inside `from_stored`): a bound the
        model puts on new input may not hold for what an older git-lanes wrote, and must not hide it."""
        return _STORED.get()

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
        from git_lanes.model.schema import schema_of  # loaded by the faces that publish schemas

        for spec in _specs(cls):
            schema = schema_of(spec.type)
            if spec.doc:
                schema = {**schema, "description": spec.doc}
            properties[spec.key] = schema
            if spec.required and spec.omit is None:
                required.append(spec.key)
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        return {"type": "object", "title": cls.__name__, **({"description": " ".join(doc.split())} if doc else {}),
                "properties": properties, "required": required}


# Per record class: `from_dict` compiled into one function (`_reader`) once the class has read FIRST_USES
# records, as its checks are (`_compiled`): no loop over its specs, and a dict checked as one by its type.
_READERS: dict[type, Callable[[Any], Any]] = {}
_READS: dict[type, int] = {}


def _reader(cls: type) -> Callable[[Any], Any]:
    """What `Record.from_dict` does for `cls`, as one function: the same keys taken in the same order, the same
    errors for a value that is no mapping, a key lacking and a key not declared."""
    namespace: dict[str, Any] = {"__cls": cls, "__Mapping": Mapping, "__stored": _STORED.get,
                                 "__refused": _refused}
    body = ["  if type(data) is not dict and not isinstance(data, __Mapping):",
            "    __refused(__cls, data)",
            "  kwargs = {}"]
    for spec in _specs(cls):
        body.append(f"  if {spec.key!r} in data:")
        body.append(f"    kwargs[{spec.name!r}] = data[{spec.key!r}]")
        if spec.required:
            body.append("  else:")
            body.append(f"    __refused(__cls, data, lacks={spec.key!r})")
    body.append("  if len(kwargs) != len(data) and not __stored():")
    body.append("    __refused(__cls, data, undeclared=True)")
    body.append("  return __cls(**kwargs)")
    source = "def from_dict(data):\n" + "\n".join(body) + "\n"
    exec(source, namespace)  # noqa: S102 - source built from the class's own field names and keys
    read: Callable[[Any], Any] = namespace["from_dict"]
    read.__qualname__ = f"{cls.__qualname__}.from_dict"
    return read


def _refused(cls: Any, data: Any, lacks: str | None = None, undeclared: bool = False) -> None:
    """The error of `from_dict` for `data`: not a mapping, lacking key `lacks`, or holding keys `cls` does not
    declare (`undeclared`: when there are none, nothing is refused)."""
    if lacks is not None:
        raise UserError(f"{cls.__name__} lacks {lacks!r}", code=cls.INVALID)
    if not undeclared:
        raise UserError(f"{cls.__name__} must be a JSON object, got {type(data).__name__}", code=cls.INVALID)
    unknown = sorted(set(data) - {spec.key for spec in _specs(cls)} - cls.IGNORED, key=str)
    if unknown:
        raise UserError(f"{cls.__name__} has no field {', '.join(map(repr, unknown))}", code=cls.INVALID)


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
