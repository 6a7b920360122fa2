"""``MethodRegistry``: lookups, duplicates, built-ins, notification fan-out, thread-safety;
and the Server's use of it (``method_handler``, ``notification_handler`` and the dict
views ``method_handlers`` / ``notification_handlers``)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpsync import Client, DuplicateHandlerError, HandlerContext, MethodRegistry, Server
from mcpsync.dispatch.registry import NotificationHandlers, RequestHandlers
from tests.helpers import WAIT

Handler = Callable[..., Any]


@pytest.fixture
def eager_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter can, so a race has room to show."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def make() -> MethodRegistry[Handler, Handler]:
    return MethodRegistry("test")


def one(*_: Any) -> dict[str, Any]:
    return {"one": True}


def two(*_: Any) -> dict[str, Any]:
    return {"two": True}


def test_a_miss_is_none_and_a_hit_the_handler() -> None:
    registry = make()
    assert registry.request_handler("x/y") is None
    registry.add_request("x/y", one)
    assert registry.request_handler("x/y") is one
    assert registry.request_methods() == ["x/y"]
    assert registry.notification_handlers("notifications/x") == ()
    assert registry.notify("notifications/x", {}) is False


def test_a_second_handler_for_a_method_is_an_error_unless_replace() -> None:
    registry = make()
    registry.add_request("x/y", one)
    with pytest.raises(DuplicateHandlerError, match=r"'x/y' already has a handler.*replace=True"):
        registry.add_request("x/y", two)
    assert registry.request_handler("x/y") is one
    registry.add_request("x/y", two, replace=True)
    assert registry.request_handler("x/y") is two


def test_a_built_in_may_be_replaced_once_then_the_replacement_is_guarded() -> None:
    registry = make()
    registry.set_default("ping", one)
    assert registry.is_default("ping")
    registry.add_request("ping", two)
    assert registry.request_handler("ping") is two and not registry.is_default("ping")
    with pytest.raises(DuplicateHandlerError):
        registry.add_request("ping", one)


def test_remove() -> None:
    registry = make()
    registry.set_default("ping", one)
    assert registry.remove_request("ping") is one
    assert registry.request_handler("ping") is None
    with pytest.raises(KeyError):
        registry.remove_request("ping")
    registry.add_notification("n", one)
    registry.add_notification("n", two)
    registry.remove_notification("n", one)
    assert registry.notification_handlers("n") == (two,)
    registry.remove_notification("n")
    assert registry.notification_methods() == []
    with pytest.raises(KeyError):
        registry.remove_notification("n")


def test_bad_registrations_are_refused() -> None:
    registry = make()
    with pytest.raises(TypeError):
        registry.add_request("", one)
    with pytest.raises(TypeError):
        registry.add_request("x/y", "not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        registry.add_notification("n", None)  # type: ignore[arg-type]


def test_notifications_run_every_handler_in_order_despite_failures() -> None:
    registry = make()
    calls: list[tuple[str, Any]] = []

    def fails(params: Any) -> None:
        calls.append(("fails", params))
        raise RuntimeError("boom")

    registry.add_notification("n", lambda params: calls.append(("first", params)))
    registry.add_notification("n", fails)
    registry.add_notification("n", lambda params: calls.append(("last", params)))
    with pytest.raises(DuplicateHandlerError):
        registry.add_notification("n", fails)
    assert registry.notify("n", 7) is True
    assert calls == [("first", 7), ("fails", 7), ("last", 7)]


@pytest.mark.usefixtures("eager_switching")
def test_concurrent_registrations_are_all_kept_and_lookups_never_fail() -> None:
    # Copy-on-write without the lock would lose updates here: every writer copies the
    # dict it saw, and the last one to publish would drop the others' entries.
    registry = make()
    writers, per_writer = 8, 200
    start = threading.Barrier(writers + 2)
    done = threading.Event()
    errors: list[BaseException] = []

    def write(n: int) -> None:
        start.wait(WAIT)
        for i in range(per_writer):
            registry.add_request(f"m/{n}/{i}", one)
            registry.add_notification("fan-in", _tagged(n, i))

    def read() -> None:
        start.wait(WAIT)
        try:
            while not done.is_set():
                for i in range(0, per_writer, 7):
                    handler = registry.request_handler(f"m/0/{i}")
                    assert handler is None or handler is one
                    registry.notify("nobody-listens")
                    len(registry.notification_handlers("fan-in"))
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,), name=f"registry-writer-{n}")
               for n in range(writers)]
    threads += [threading.Thread(target=read, name=f"registry-reader-{n}") for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads[:writers]:
        thread.join(WAIT * 3)
    done.set()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert not errors
    assert len(registry.request_methods()) == writers * per_writer
    assert len(registry.notification_handlers("fan-in")) == writers * per_writer


def _tagged(n: int, i: int) -> Callable[[Any], None]:
    def handler(params: Any) -> None:
        pass

    handler.__qualname__ = f"h{n}_{i}"
    return handler


@pytest.mark.usefixtures("eager_switching")
def test_concurrent_duplicate_registration_admits_exactly_one() -> None:
    threads_n, rounds = 8, 30
    for _ in range(rounds):
        registry = make()
        start = threading.Barrier(threads_n)
        won: list[Handler] = []
        lock = threading.Lock()

        def register(registry: MethodRegistry[Handler, Handler] = registry,
                     start: threading.Barrier = start, won: list[Handler] = won,
                     lock: threading.Lock = lock) -> None:
            def mine(*_: Any) -> dict[str, Any]:
                return {}

            start.wait(WAIT)
            try:
                registry.add_request("x/race", mine)
            except DuplicateHandlerError:
                return
            with lock:
                won.append(mine)

        threads = [threading.Thread(target=register, name=f"registry-race-{n}")
                   for n in range(threads_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
            assert not thread.is_alive()
        assert len(won) == 1
        assert registry.request_handler("x/race") is won[0]


def test_the_dict_views() -> None:
    registry = make()
    requests: RequestHandlers[Handler] = RequestHandlers(registry)
    notifications = NotificationHandlers(registry)
    requests["x/y"] = one
    requests["x/y"] = two  # a dict assignment replaces, as it always did
    assert requests["x/y"] is two and requests.get("x/z") is None and "x/y" in requests
    assert list(requests) == ["x/y"] and len(requests) == 1
    del requests["x/y"]
    assert registry.request_handler("x/y") is None
    seen: list[Any] = []
    registry.add_notification("n", seen.append)
    registry.add_notification("n", lambda p: seen.append(("again", p)))
    notifications["n"](1)  # one callable that runs them all
    assert seen == [1, ("again", 1)]
    notifications["n"] = seen.append  # assignment replaces them all
    assert registry.notification_handlers("n") == (seen.append,)
    assert notifications.get("other") is None and list(notifications) == ["n"]
    del notifications["n"]
    assert len(notifications) == 0


# -- the Server on the registry -----------------------------------------------------------


def test_server_method_handler_replaces_a_built_in_and_guards_custom_methods() -> None:
    server = Server("registry")

    @server.method_handler("ping")
    def my_ping(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        return {"mine": True}

    @server.method_handler("x/echo")
    def echo(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        return {"echo": params.get("v"), "method": ctx.method}

    with pytest.raises(DuplicateHandlerError):
        server.method_handler("x/echo")(echo)
    server.method_handler("x/echo", replace=True)(echo)
    assert server.methods.request_handler("x/echo") is echo
    assert server._dispatcher.handlers["x/echo"] is echo
    with Client.memory(server, protocol_version="2025-11-25") as client:
        assert client.request("ping") == {"mine": True}
        assert client.request("x/echo", {"v": 3}) == {"echo": 3, "method": "x/echo"}


def test_server_notification_handlers_several_per_method() -> None:
    server = Server("registry")
    got: list[tuple[str, Any]] = []
    both = threading.Event()

    @server.notification_handler("notifications/x/custom")
    def first(session: Any, params: dict[str, Any]) -> None:
        got.append(("first", params))

    @server.notification_handler("notifications/x/custom")
    def second(session: Any, params: dict[str, Any]) -> None:
        got.append(("second", params))
        both.set()

    with Client.memory(server, protocol_version="2025-11-25") as client:
        client.notify("notifications/x/custom", {"n": 1})
        assert both.wait(WAIT)
    assert got == [("first", {"n": 1}), ("second", {"n": 1})]
