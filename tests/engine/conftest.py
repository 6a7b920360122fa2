"""Fixtures shared by the engine tests."""

from __future__ import annotations

import pytest

from .test_connection import Pair


@pytest.fixture
def pairs():
    """Make connected :class:`Pair` s; every one is closed after the test."""
    made = []

    def make(*args, **kwargs):
        pair = Pair(*args, **kwargs)
        made.append(pair)
        return pair

    yield make
    for pair in made:
        pair.close()
