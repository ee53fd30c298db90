"""Frozen records (torchada._core.records): the dataclass behaviour the tables rely on, made
without generating code."""

from __future__ import annotations

import builtins
import dataclasses
import pickle
from types import MappingProxyType

import pytest

from torchada._core import records
from torchada._core.records import field, record


@record
class Point:
    x: int
    y: int = 0
    tags: tuple = field(default=(), metadata={"doc": "labels"})
    extra: dict = field(default_factory=dict)

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


@record
class Point3(Point):
    z: int = 0


@dataclasses.dataclass(frozen=True)
class DataPoint:
    x: int
    y: int = 0
    tags: tuple = ()
    extra: dict = dataclasses.field(default_factory=dict)


def test_construction_as_a_frozen_dataclass():
    cases = [((1,), {}), ((1, 2), {}), ((), {"x": 1, "tags": ("a",)}), ((1,), {"y": 3})]
    for args, kwargs in cases:
        ours, theirs = Point(*args, **kwargs), DataPoint(*args, **kwargs)
        assert [getattr(ours, f.name) for f in records.fields(ours)] == list(
            dataclasses.astuple(theirs)
        )
        assert repr(ours) == repr(theirs).replace("DataPoint", "Point")


def test_default_factories_give_each_instance_its_own_value():
    a, b = Point(1), Point(2)
    assert a.extra == {} and a.extra is not b.extra


@pytest.mark.parametrize(
    "args,kwargs,message",
    [
        ((), {}, "Point() is missing its argument 'x'"),
        ((1,), {"x": 2}, "Point() got two values for 'x'"),
        ((1,), {"w": 2}, "Point() has no field 'w'"),
        ((1, 2, (), {}, 5), {}, "Point() takes 4 arguments, 5 were given"),
    ],
)
def test_bad_arguments_say_which(args, kwargs, message):
    with pytest.raises(TypeError) as err:
        Point(*args, **kwargs)
    assert str(err.value) == message


def test_frozen():
    p = Point(1)
    with pytest.raises(AttributeError, match="cannot assign to field 'x' of a frozen Point"):
        p.x = 2
    with pytest.raises(AttributeError, match="cannot delete field 'y' of a frozen Point"):
        del p.y
    assert p.x == 1 and p.y == 0


def test_equality_and_hash_by_fields_and_class():
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert Point(1) != Point3(1)  # another class, as dataclasses compare
    assert hash(Point(1, 2, ("a",), None)) == hash(Point(1, 2, ("a",), None))
    with pytest.raises(TypeError):  # an unhashable field, as with dataclasses
        hash(Point(1, extra={}))


def test_fields_in_order_with_metadata_and_inheritance():
    assert [f.name for f in records.fields(Point3)] == ["x", "y", "tags", "extra", "z"]
    tags = records.fields(Point)[2]
    assert tags.metadata == {"doc": "labels"} and isinstance(tags.metadata, MappingProxyType)
    assert Point3(1, z=4).norm1() == 1 and Point3(1, z=4).z == 4
    with pytest.raises(TypeError, match="DataPoint is not a record class"):
        records.fields(DataPoint)


def test_class_attributes_hold_defaults_as_dataclasses_do():
    assert Point.y == 0 and Point.tags == ()
    assert not hasattr(Point, "x") and not hasattr(Point, "extra")


def test_replace():
    p = Point(1, 2, ("a",))
    q = records.replace(p, y=7)
    assert q == Point(1, 7, ("a",)) and p.y == 2
    with pytest.raises(TypeError, match="Point has no field 'w'"):
        records.replace(p, w=1)


def test_a_field_without_default_may_not_follow_one_with():
    with pytest.raises(TypeError, match="field 'b' without a default follows one with"):

        @record
        class Bad:
            a: int = 0
            b: int


def test_pickles_by_class_and_values():
    p = Point3(1, 2, ("t",), {"k": 1}, z=3)
    q = pickle.loads(pickle.dumps(p, protocol=4))
    assert q == p and type(q) is Point3 and q.extra == {"k": 1}


def test_no_code_is_generated(monkeypatch):
    # What makes records cheap: dataclasses compile six methods per class.
    def refuse(*args, **kwargs):
        raise AssertionError("code was generated")

    monkeypatch.setattr(builtins, "exec", refuse)
    monkeypatch.setattr(builtins, "compile", refuse)

    @record
    class Cheap:
        a: int
        b: str = "x"

    assert Cheap(1) == Cheap(1, "x")
