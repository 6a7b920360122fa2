"""``mcpsync.frozen.Frozen``: the small immutable value classes behave as frozen
dataclasses do (compared, hashed, shown, matched and pickled by their fields; never
changed), and every one in the package lists its ``__slots__`` in the order its
``__init__`` takes them, which ``_init``, ``__match_args__`` and pickling rely on."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import re
from pathlib import Path

import pytest

import mcpsync
from mcpsync.frozen import Frozen


class Point(Frozen):
    __slots__ = ("x", "y")

    x: int
    y: int

    def __init__(self, x: int, y: int = 0) -> None:
        self._init(x, y)


def test_compared_hashed_shown_and_pickled_by_fields() -> None:
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    assert len({Point(1, 2), Point(1, 2), Point(1)}) == 2
    assert repr(Point(1)) == "Point(x=1, y=0)"
    assert pickle.loads(pickle.dumps(Point(3, 4))) == Point(3, 4)
    assert Point(1, 2) != (1, 2)  # another class is never equal


def test_matched_by_position() -> None:
    match Point(5, 6):
        case Point(a, b):
            assert (a, b) == (5, 6)
        case _:
            pytest.fail("no match")


def test_never_changed() -> None:
    point = Point(1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.y
    with pytest.raises(AttributeError):
        point.z = 1  # type: ignore[attr-defined]
    assert point == Point(1, 2)


def test_a_field_missing_from_init_is_refused() -> None:
    class Broken(Frozen):
        __slots__ = ("a", "b")

        def __init__(self, a: int) -> None:
            self._init(a)

    with pytest.raises(ValueError):
        Broken(1)


def _all_frozen() -> list[type[Frozen]]:
    """Every Frozen class of the package: the modules whose source declares one are
    imported (found by reading, so that none is missed and no optional extra is needed)."""
    root = Path(mcpsync.__file__).parent
    for path in sorted(root.rglob("*.py")):
        if re.search(r"^class \w+\(Frozen\):", path.read_text(encoding="utf-8"), re.M):
            parts = path.relative_to(root.parent).with_suffix("").parts
            importlib.import_module(".".join(parts))
    found: list[type[Frozen]] = []
    todo = list(Frozen.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__.startswith("mcpsync.")]


def test_every_value_class_lists_its_fields_in_init_order() -> None:
    classes = _all_frozen()
    assert {cls.__name__ for cls in classes} >= {
        "Method", "Visible", "Rule", "OptionSpec", "TaskTool", "Followed", "Mount"}
    for cls in classes:
        params = [name for name in inspect.signature(cls.__init__).parameters
                  if name != "self"]
        assert tuple(params) == cls.__slots__, cls
