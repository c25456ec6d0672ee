"""`Frozen` (git_lanes/model/frozen.py) behaves as the frozen dataclasses it replaced: the records every layer
passes about rely on its fields, defaults, equality, hashing, repr and immutability."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import ClassVar

import pytest

from git_lanes.errors import UserError
from git_lanes.model import frozen
from git_lanes.model.frozen import FIRST_USES, Frozen, FrozenInstanceError, field, fields, replace
from git_lanes.model.record import Record, meta


class Point(Frozen):
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str | None = field(default=None, compare=False)
    ORIGIN: ClassVar[int] = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", list(self.tags))


class Point3(Point):
    z: int = 0
    y: int = 5  # overridden: keeps its place, takes the new default


class Tally(Record):
    count: int
    names: tuple[str, ...] = meta(omit="empty", default=())


def test_fields_defaults_and_factories():
    assert [f.name for f in fields(Point)] == ["x", "y", "tags", "note"]
    assert [f.name for f in fields(Point3(1))] == ["x", "y", "tags", "note", "z"]
    assert Point(1) == Point(x=1, y=0, tags=[])
    first, second = Point(1), Point(2)
    first.tags.append("a")
    assert second.tags == [], "each instance gets its own default"
    assert Point3(1).y == 5 and Point3(1, 2, [], None, 3).z == 3
    assert Point.ORIGIN == 0 and "ORIGIN" not in {f.name for f in fields(Point)}
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


def test_equality_hash_and_repr_follow_the_compared_fields_of_one_class():
    assert Point(1, 2, note="a") == Point(1, 2, note="b")
    assert Point(1, 2) != Point(1, 3)
    assert Point3(1, 2) != Point(1, 2), "instances of different classes never compare equal"
    assert hash(Tally(1, ("a",))) == hash(Tally(1, ("a",)))
    assert len({Tally(1), Tally(1), Tally(2)}) == 2
    assert repr(Point(1)) == "Point(x=1, y=0, tags=[], note=None)"


def test_instances_are_frozen():
    point = Point(1)
    with pytest.raises(FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del point.x  # type: ignore[misc]
    assert point.x == 1


def test_a_subclass_compiles_its_own_init_after_its_base_did():
    assert Point(1).tags == []
    assert Point3(1, z=2).z == 2, "the base's compiled __init__ is not inherited by the subclass"


def test_replace_and_records_validate_through_init():
    assert replace(Point(1, 2), y=3) == Point(1, 3)
    assert replace(Tally(1), names=["a"]).names == ("a",), "a record coerces what replace gives it"
    with pytest.raises(UserError) as caught:
        replace(Tally(1), count="x")
    assert caught.value.code == "invalid_record"
    assert Tally.from_dict({"count": 2}).to_dict() == {"count": 2}
    assert Tally.json_schema()["required"] == ["count"]


def loaded_by(modules: str) -> list[str]:
    probe = (f"import sys, json; import {modules}; "
             "print(json.dumps(sorted(m for m in ('dataclasses', 'inspect', 'typing') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return list(json.loads(out))


def test_defining_records_loads_neither_dataclasses_nor_inspect():
    # The hook path's records load not even typing; Record's validation reads field types with typing.
    assert loaded_by("git_lanes.model.calls, git_lanes.model.runs, git_lanes.model.policy") == []
    assert loaded_by("git_lanes.model.coordination, git_lanes.model.records") == ["typing"]


def fresh_point() -> type:
    """A class like Point that has built nothing yet, so it is still on its generic `__init__`."""
    class Fresh(Point3):
        def __post_init__(self) -> None:
            object.__setattr__(self, "tags", tuple(self.tags))
    return Fresh


CALLS = [((1,), {}), ((1, 2, ["t"]), {"note": "n", "z": 3}), ((), {"x": 1, "z": 2}), ((1, 2, [], None, 4), {}),
         ((), {}), ((1, 2, [], None, 4, 5), {}), ((1,), {"x": 2}), ((1,), {"w": 2}), ((1,), {"w": 2, "x": 3}),
         ((), {"y": 1, "tags": []})]


def outcome(cls: type, args: tuple, kwargs: dict) -> object:
    try:
        built = cls(*args, **kwargs)
    except TypeError as exc:
        return str(exc).replace(cls.__qualname__, "C")
    return {f.name: getattr(built, f.name) for f in fields(built)}


def test_the_generic_init_of_first_uses_builds_and_refuses_as_the_compiled_one():
    generic, compiled = fresh_point(), fresh_point()
    compiled.__init__ = frozen._init_of(compiled)
    found = [(outcome(generic, *call), outcome(compiled, *call)) for call in CALLS]
    assert [g for g, _ in found] == [c for _, c in found]
    assert "tags" in found[0][0] and found[0][0]["tags"] == ()  # built, and __post_init__ ran
    assert sum(isinstance(g, str) for g, _ in found) == 6  # every kind of refusal was tried
    assert "__init__" in vars(generic) and vars(generic)["__init__"].__code__ is not vars(compiled)["__init__"].__code__


def test_a_class_compiles_its_own_init_once_it_built_its_first_uses():
    cls = fresh_point()
    first = vars(cls)["__init__"]
    built = [cls(number) for number in range(FIRST_USES - 1)]
    assert vars(cls)["__init__"] is first and built[-1].x == FIRST_USES - 2
    assert cls(7, z=1) == cls(7, z=1) and vars(cls)["__init__"] is not first
    assert vars(cls)["__init__"].__qualname__ == first.__qualname__ == f"{cls.__qualname__}.__init__"


def test_a_compiled_init_stores_fields_in_the_instance_unless_a_slot_or_descriptor_stands_for_one():
    """The compiled `__init__` puts each field straight into the instance's dict (half the cost of a frozen
    dataclass's object.__setattr__), with the same record; a class with __slots__ in its MRO, or a data
    descriptor named like a field, keeps object.__setattr__, which honours them."""

    class Plain(Frozen):
        a: int
        b: str = "b"

    class Guarded(Frozen):
        a: int

    seen = []

    class Setter:
        def __get__(self, instance, owner=None):
            return self if instance is None else instance.__dict__["a"]

        def __set__(self, instance, value):
            seen.append(value)
            instance.__dict__["a"] = value

    class Described(Guarded):
        a = Setter()  # type: ignore[assignment]

    class Slotted(Plain):
        __slots__ = ()

    for cls in (Plain, Described, Slotted):
        cls.__init__ = frozen._init_of(cls)  # type: ignore[method-assign]
    source = {cls: vars(cls)["__init__"].__code__.co_names for cls in (Plain, Described, Slotted)}
    assert "__frozen_set" not in source[Plain]
    assert "__frozen_set" in source[Described] and "__frozen_set" in source[Slotted]
    plain = Plain(1)
    assert vars(plain) == {"a": 1, "b": "b"} and plain == Plain(1) and hash(plain) == hash(Plain(1))
    with pytest.raises(FrozenInstanceError):
        plain.a = 2  # type: ignore[misc]
    assert Described(5).a == 5 and seen == [5]
    assert Slotted(3, "c").b == "c"
