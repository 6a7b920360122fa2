"""The contract fixtures: each parametrised over every backend of its contract (see
``backends.py``), so every contract test runs against memory, file, SQLite and Redis
stores alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcpsync.stores import EventStore, SessionStore, TaskStore

from .backends import (
    EVENT_STORES,
    SESSION_STORES,
    TASK_STORES,
    event_store_factory,
    session_store_factory,
    task_store_factory,
)


@pytest.fixture(params=SESSION_STORES)
def new_session_store(request: pytest.FixtureRequest,
                      tmp_path: Path) -> Callable[..., SessionStore]:
    """Instances of one kind of session store over one shared state."""
    return session_store_factory(request.param, request, tmp_path)


@pytest.fixture(params=EVENT_STORES)
def new_event_store(request: pytest.FixtureRequest) -> Callable[..., EventStore]:
    """Event stores of one kind (on Redis, sharing the test's key prefix)."""
    return event_store_factory(request.param, request)


@pytest.fixture(params=TASK_STORES)
def make_task_store(request: pytest.FixtureRequest,
                    tmp_path: Path) -> Iterator[Callable[..., TaskStore]]:
    """A function making task stores of one kind (bounds as keywords); all closed after."""
    made: list[TaskStore] = []
    factory = task_store_factory(request.param, request, tmp_path)

    def make(**bounds: object) -> TaskStore:
        store = factory(**bounds)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def task_store(make_task_store: Callable[..., TaskStore]) -> TaskStore:
    return make_task_store()
