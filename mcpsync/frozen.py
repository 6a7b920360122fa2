"""Small immutable value classes, made without ``dataclass``: :class:`Frozen`.

A frozen dataclass writes its ``__init__``, ``__eq__``, ``__hash__`` and ``__repr__`` as
source and compiles them when its module is imported, and a ``NamedTuple`` compiles each
field's annotation under postponed annotations: a few hundred µs each, paid by every
server's start for the value types it imports before its first answer (a method table
row, a component's options, a mount). A class deriving from :class:`Frozen` names its
fields in ``__slots__`` and sets them in its own ``__init__`` (where its defaults and
checks live) with :meth:`Frozen._init`, in the same order: ``__slots__`` lists them in the
order ``__init__`` takes them (so not sorted: ``# noqa: RUF023``). It is then compared, hashed,
shown, matched and pickled by its fields, in that order, and refuses to be changed, as a
frozen dataclass does (``FrozenInstanceError``). Thread-safe: immutable.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, cast

__all__ = ["Frozen"]


class Frozen:
    """The base of an immutable value class whose fields are its ``__slots__``."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        setattr(cls, "__match_args__", _names(cls))  # noqa: B010  (mypy: a class attribute)

    def _init(self, *values: object) -> None:
        """Set every field, in ``__slots__`` order (for the subclass's ``__init__``)."""
        for name, value in zip(_names(type(self)), values, strict=True):
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _names(type(self)))

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Frozen)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return type(self).__qualname__ + "(" + ", ".join(
            f"{name}={getattr(self, name)!r}" for name in _names(type(self))) + ")"

    def __reduce__(self) -> tuple[type[Frozen], tuple[object, ...]]:
        # The constructor takes the fields by position, in ``__slots__`` order.
        return type(self), self._fields()


def _names(cls: type[Frozen]) -> tuple[str, ...]:
    """The fields of a :class:`Frozen` class: its own ``__slots__``."""
    return cast("tuple[str, ...]", cls.__slots__)
