"""`Frozen`: immutable value classes that cost almost nothing to define.

`@dataclass(frozen=True)` compiles about six methods with `exec` for every class when the module defining it
is imported (about 1 ms a class here), and `import dataclasses` loads `inspect` (about 16 ms): start-up paid
by every command for classes most commands never build, and by every agent hook. A `Frozen` subclass only
lists its fields when it is defined. Its first instances are built by a generic `__init__` that walks the
field list; the class's own `__init__` is compiled (about 0.2 ms of `exec`) once it has built `FIRST_USES`, so a
short command, which builds most of its classes a few times, compiles none, and a long-lived process gets the
fast one for the classes it builds often. Equality, hashing, `repr` and frozenness are generic methods on
the base. Type checkers see the subclasses as frozen dataclasses (`dataclass_transform`).

What a subclass gets, as a frozen dataclass would: fields from its annotations (ClassVars excluded), base
classes' fields first; defaults, `field(default_factory=..., compare=False, metadata=...)`; an `__init__`
taking the fields by position or keyword and then calling `__post_init__` if the class has one; `==` and
`hash` over the compared fields, between instances of the same class only; `repr`; assignment refused with
`FrozenInstanceError` (an AttributeError; `__post_init__` normalises with `object.__setattr__`). `fields()`
and `replace()` are this module's, as `dataclasses` has them."""

from __future__ import annotations

import sys

try:  # the C module `operator` re-exports: `operator` itself costs a light sync ~0.3 ms of its start-up
    from _operator import attrgetter
except ImportError:  # pragma: no cover  # an implementation without it
    from operator import attrgetter

# Not `from typing import …`: the agent-hook path, which builds these records, never loads typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, TypeVar
    from typing import dataclass_transform as dataclass_transform

    F = TypeVar("F", bound="_Base")
else:
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        """For type checkers only (they read the one in `typing`): nothing to do when the code runs."""
        return lambda cls: cls


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen instance."""


class Field:
    """One field of a `Frozen` class, as `dataclasses.Field` describes one."""

    __slots__ = ("name", "default", "default_factory", "compare", "repr", "metadata")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING, compare: bool = True,
                 repr: bool = True, metadata: dict[str, Any] | None = None) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr
        self.metadata: dict[str, Any] = metadata or {}

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


def field(*, default: Any = MISSING, default_factory: Any = MISSING, compare: bool = True, repr: bool = True,
          metadata: dict[str, Any] | None = None) -> Any:
    """A field with a default factory, metadata, or left out of comparisons (`compare=False`)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("a field cannot have both a default and a default factory")
    return Field(default, default_factory, compare, repr, metadata)


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        head = annotation.split("[", 1)[0].strip()
        return head in ("ClassVar", "typing.ClassVar", "t.ClassVar")
    typing = sys.modules.get("typing")  # an annotation that is a ClassVar object means typing is loaded
    return typing is not None and (annotation is typing.ClassVar
                                   or getattr(annotation, "__origin__", None) is typing.ClassVar)


class _Base:
    # Declared for type checkers only: at run time the base keeps no annotations, which typing.get_type_hints
    # would evaluate (with names this module does not import) on every subclass.
    if TYPE_CHECKING:
        # Set on each subclass when it is defined.
        __frozen_fields__: ClassVar[tuple[Field, ...]]
        # The values `==` and `hash` look at (a tuple, or the value itself when one field is compared).
        __frozen_key__: ClassVar[Any]
    __frozen_fields__ = ()
    __frozen_key__ = staticmethod(lambda _: ())

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, Field] = {}
        for base in reversed(cls.__mro__[1:]):
            for inherited in base.__dict__.get("__frozen_fields__", ()):
                found[inherited.name] = inherited
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if _is_classvar(annotation):
                continue
            value = cls.__dict__.get(name, MISSING)
            if isinstance(value, Field):
                declared = value
                if declared.default is MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, declared.default)
            else:
                declared = Field(value)
            declared.name = name
            found[name] = declared
        cls.__frozen_fields__ = tuple(found.values())
        compared = [f.name for f in cls.__frozen_fields__ if f.compare]
        if compared:
            cls.__frozen_key__ = attrgetter(*compared)
        setattr(cls, "__match_args__", tuple(found))
        if "__init__" not in cls.__dict__:
            setattr(cls, "__init__", _compile_on_first_use(cls))
        # A class defining __eq__ loses the inherited __hash__ (Python sets it to None); a frozen
        # dataclass would give it one again.
        if "__eq__" in cls.__dict__ and cls.__dict__.get("__hash__", MISSING) is None:
            setattr(cls, "__hash__", _Base.__hash__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(self.__frozen_key__(self) == self.__frozen_key__(other))

    def __hash__(self) -> int:
        return hash(self.__frozen_key__(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__frozen_fields__ if f.repr)
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


# Instances a class builds with the generic `__init__` before it compiles its own.
FIRST_USES = 32


def _compile_on_first_use(cls: type) -> Callable[..., None]:
    uses = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal uses
        uses += 1
        if uses < FIRST_USES:
            _build(cls, self, args, kwargs)
            return
        compiled = _init_of(cls)
        setattr(cls, "__init__", compiled)
        compiled(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _build(cls: type, self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """What the compiled `__init__` does, read from the field list, with Python's own errors for arguments
    that do not fit (checked, as Python does, before any field is set)."""
    declared: tuple[Field, ...] = cls.__frozen_fields__  # type: ignore[attr-defined]
    where = f"{cls.__qualname__}.__init__()"
    values = list(args[:len(declared)]) + [MISSING] * (len(declared) - len(args))
    if kwargs:
        index = {f.name: number for number, f in enumerate(declared)}
        for name, value in kwargs.items():
            number = index.get(name)
            if number is None:
                raise TypeError(f"{where} got an unexpected keyword argument {name!r}")
            if number < len(args):
                raise TypeError(f"{where} got multiple values for argument {name!r}")
            values[number] = value
    if len(args) > len(declared):
        required = 1 + sum(f.default is MISSING and f.default_factory is MISSING for f in declared)
        takes = f"{required}" if required == len(declared) + 1 else f"from {required} to {len(declared) + 1}"
        raise TypeError(f"{where} takes {takes} positional argument{'s' if takes != '1' else ''} but "
                        f"{len(args) + 1} were given")
    missing = [f.name for f, value in zip(declared, values)
               if value is MISSING and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        quoted = [repr(name) for name in missing]
        listed = quoted[0] if len(quoted) == 1 else (" and ".join(quoted) if len(quoted) == 2
                                                     else ", ".join(quoted[:-1]) + ", and " + quoted[-1])
        raise TypeError(f"{where} missing {len(missing)} required positional argument"
                        f"{'s' if len(missing) > 1 else ''}: {listed}")
    for f, value in zip(declared, values):
        if value is MISSING:
            value = f.default_factory() if f.default_factory is not MISSING else f.default
        object.__setattr__(self, f.name, value)
    if hasattr(cls, "__post_init__"):
        self.__post_init__()


def _init_of(cls: type) -> Callable[..., None]:
    """The class's `__init__`, compiled once: setting each field as a frozen dataclass's does (see `direct`)."""
    namespace: dict[str, Any] = {"__frozen_set": object.__setattr__, "__frozen_missing": MISSING}
    parameters = ["self"]
    body = []
    declared: tuple[Field, ...] = cls.__frozen_fields__  # type: ignore[attr-defined]
    # Each field is stored in the instance's dict, where `object.__setattr__` (a frozen dataclass's way) first
    # looks the name up on the class: building a record costs half as much (a sync builds a few thousand).
    # The same store, unless a class of the MRO has __slots__ or a data descriptor stands for a field.
    direct = bool(declared) and not any("__slots__" in k.__dict__ for k in cls.__mro__) and not any(
        hasattr(k.__dict__.get(f.name), "__set__") for f in declared for k in cls.__mro__)
    if direct:
        body.append("  __frozen_fields = self.__dict__")
    for f in declared:
        if f.default_factory is not MISSING:
            namespace[f"__frozen_factory_{f.name}"] = f.default_factory
            parameters.append(f"{f.name}=__frozen_missing")
            body.append(f"  if {f.name} is __frozen_missing: {f.name} = __frozen_factory_{f.name}()")
        elif f.default is not MISSING:
            namespace[f"__frozen_default_{f.name}"] = f.default
            parameters.append(f"{f.name}=__frozen_default_{f.name}")
        else:
            parameters.append(f.name)
        body.append(f"  __frozen_fields[{f.name!r}] = {f.name}" if direct
                    else f"  __frozen_set(self, {f.name!r}, {f.name})")
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    source = f"def __init__({', '.join(parameters)}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(source, namespace)  # noqa: S102 - source built from the class's own field names
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class Frozen(_Base):
    """Base of an immutable value class (see the module's docstring)."""


def fields(value: Any) -> tuple[Field, ...]:
    """The fields of a `Frozen` class or instance, in `__init__`'s order."""
    found: tuple[Field, ...] = value.__frozen_fields__
    return found


def replace(value: F, **changes: Any) -> F:
    """A copy of `value` with some fields changed, built (and so checked) through `__init__`."""
    for f in value.__frozen_fields__:
        if f.name not in changes:
            changes[f.name] = getattr(value, f.name)
    return type(value)(**changes)
