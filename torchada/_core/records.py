"""Frozen record classes, the part of :mod:`dataclasses` that torchada's tables use, made without
generating code.

``@dataclass`` writes and compiles the source of ``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__`` and ``__delattr__`` for every class it decorates: about 2 ms per
class on a busy 2-core machine, and 16-20 ms for the table schema's eleven classes, paid by every
process that reads a table (activation on MUSA does). :func:`record` gives a class the same
behaviour from shared generic methods: keyword or positional construction with defaults and
default factories, immutability, equality and hashing by fields, the dataclass ``repr``, and
:func:`fields` and :func:`replace` in place of ``dataclasses.fields`` and ``dataclasses.replace``.
Instances pickle by class and attribute values, as dataclass instances do; torchada's cache
stores them as data (:func:`record_class` finds the class again).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Type, TypeVar

__all__ = ["MISSING", "Field", "field", "fields", "record", "record_class", "replace"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: No default (a field without one must be given).
MISSING: Any = _Missing()

T = TypeVar("T")


class Field:
    """One field of a record: its name, default or default factory, and metadata."""

    __slots__ = ("name", "default", "default_factory", "metadata")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("a field takes a default or a default_factory, not both")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.metadata = MappingProxyType(dict(metadata or {}))

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] = MISSING,
    metadata: Optional[Mapping[str, Any]] = None,
) -> Any:
    """A field with a default, a default factory or metadata, as ``dataclasses.field``.

    Example::

        >>> @record
        ... class Point:
        ...     x: int
        ...     tags: tuple = field(default=(), metadata={"doc": "labels"})
        >>> Point(1)
        Point(x=1, tags=())
    """
    return Field(default, default_factory, metadata)


def fields(obj_or_cls: Any) -> Tuple[Field, ...]:
    """The fields of a record class or instance, in declaration order (base classes' first).

    Example::

        >>> @record
        ... class Point:
        ...     x: int
        ...     y: int = 0
        >>> [f.name for f in fields(Point)]
        ['x', 'y']
    """
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    try:
        return cls.__record_fields__
    except AttributeError:
        raise TypeError(f"{cls.__name__} is not a record class") from None


def replace(obj: T, **changes: Any) -> T:
    """A copy of record ``obj`` with ``changes``, as ``dataclasses.replace``.

    Example::

        >>> @record
        ... class Point:
        ...     x: int
        ...     y: int = 0
        >>> replace(Point(1, 2), y=5)
        Point(x=1, y=5)
    """
    values = {f.name: getattr(obj, f.name) for f in fields(obj)}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return type(obj)(**values)


#: Every record class made so far, by ``module:qualname``: what a stored value may name.
_classes: Dict[str, type] = {}


def record_class(name: str) -> Optional[type]:
    """The record class named ``module:qualname``, if it has been made in this process (nothing is
    imported to find it): how torchada's cache (torchada._core.cache) turns stored data back
    into records without running anything the data names.

    Example::

        >>> @record
        ... class Point:
        ...     x: int
        >>> record_class(f"{__name__}:Point") is Point
        True
    """
    return _classes.get(name)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    own = self.__dict__
    all_fields = type(self).__record_fields__
    if len(args) > len(all_fields):
        raise TypeError(
            f"{type(self).__name__}() takes {len(all_fields)} arguments, {len(args)} were given"
        )
    for f, value in zip(all_fields, args):
        if f.name in kwargs:
            raise TypeError(f"{type(self).__name__}() got two values for {f.name!r}")
        own[f.name] = value
    for f in all_fields[len(args) :]:
        if f.name in kwargs:
            own[f.name] = kwargs.pop(f.name)
        elif f.default is not MISSING:
            own[f.name] = f.default
        elif f.default_factory is not MISSING:
            own[f.name] = f.default_factory()
        else:
            raise TypeError(f"{type(self).__name__}() is missing its argument {f.name!r}")
    if kwargs:
        raise TypeError(f"{type(self).__name__}() has no field {sorted(kwargs)[0]!r}")
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


def _values(self: Any) -> Tuple[Any, ...]:
    return tuple(getattr(self, f.name) for f in type(self).__record_fields__)


def _repr(self: Any) -> str:
    body = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in type(self).__record_fields__)
    return f"{type(self).__qualname__}({body})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _setattr(self: Any, name: str, value: Any) -> None:
    raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _delattr(self: Any, name: str) -> None:
    raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def record(cls: Type[T]) -> Type[T]:
    """Make ``cls`` a frozen record of its annotated attributes, as
    ``@dataclass(frozen=True)`` does (methods the class defines itself are kept).

    Example::

        >>> @record
        ... class Point:
        ...     x: int
        ...     y: int = 0
        >>> p = Point(1)
        >>> p, p == Point(1, 0), hash(p) == hash(Point(1))
        (Point(x=1, y=0), True, True)
        >>> p.x = 3
        Traceback (most recent call last):
        ...
        AttributeError: cannot assign to field 'x' of a frozen Point
    """
    inherited: Dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in getattr(base, "__record_fields__", ()):
            inherited[f.name] = f
    own = cls.__dict__.get("__annotations__", {})
    for name in own:
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        if isinstance(value, Field):
            # As dataclasses do: the class attribute is the default, or nothing.
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        inherited[name] = f
    all_fields = tuple(inherited.values())
    seen_default = False
    for f in all_fields:
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"{cls.__name__}: field {f.name!r} without a default follows one with")
        seen_default = seen_default or has_default
    cls.__record_fields__ = all_fields  # type: ignore[attr-defined]
    _classes[f"{cls.__module__}:{cls.__qualname__}"] = cls
    methods = {
        "__init__": _init,
        "__repr__": _repr,
        "__eq__": _eq,
        "__hash__": _hash,
        "__setattr__": _setattr,
        "__delattr__": _delattr,
    }
    for name, method in methods.items():
        if name not in cls.__dict__ or (name == "__hash__" and cls.__dict__[name] is None):
            setattr(cls, name, method)
    return cls
