"""Server-wide events across workers (#17): ``Server.relay_events(bus)``.

Two Server objects stand for two workers, each served over HTTP on its own real socket and
joined by a bus; a 2026-07-28 ``subscriptions/listen`` held by worker A hears what happens
on worker B (a resource updated, a list changed, a task's status: a task running there,
or cancelled through it over a shared task store), exactly once, and only its owner hears
of a task. "Nothing more arrived" is checked without sleeping: every bus message is
delivered first (``QueueBus.drain``), then a sentinel update raised on A must arrive, and
a listen sends in change order, so whatever was due came before it.

``QueueBus`` is a minimal bus of this file's own (one thread, one bounded queue) until
``mcpsync.http.bus.InProcessBus`` exists; it implements the same ``Bus`` protocol.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync import Client, Server
from mcpsync.dispatch.context import HandlerContext
from mcpsync.errors import StoreUnavailableError
from mcpsync.http.bus import Bus, BusMessage
from mcpsync.server import event_relay
from mcpsync.server.listen import Followed, Listener, ListenRegistry
from mcpsync.tasks import MemoryTaskStore, SqliteTaskStore, TaskStore
from tests.helpers import WAIT, wait_until
from tests.http.raw import SseReader, envelope, modern_headers
from tests.serving import RunningServer
from tests.tasks.peers import V2_CAPS, Peer

NOTE = "notes://a"
SENTINEL = "notes://sentinel"
ACK = "notifications/subscriptions/acknowledged"
UPDATED = "notifications/resources/updated"
TASKS = "notifications/tasks"


class QueueBus:
    """A test-only :class:`~mcpsync.http.bus.Bus`: messages go through JSON (as on a real
    bus) into one bounded queue, delivered to every subscriber, the publisher's process
    included, on one named thread. ``published`` records what was sent; ``errors``
    what a subscriber raised (none should)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=1000)
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[BusMessage], None]] = []
        self.published: list[BusMessage] = []
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="test-queue-bus", daemon=True)
        self._thread.start()

    def publish(self, message: BusMessage) -> None:
        copy = json.loads(json.dumps(message))
        with self._lock:
            self.published.append(copy)
        try:
            self._queue.put_nowait(copy)
        except queue.Full:
            raise StoreUnavailableError("the test bus is full") from None

    def subscribe(self, callback: Callable[[BusMessage], None]) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(callback)

        def stop() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return stop

    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def events(self, name: str) -> list[BusMessage]:
        with self._lock:
            return [m for m in self.published if m.get("event") == name]

    def drain(self) -> None:
        """Return once every message published so far has been delivered."""
        done = threading.Event()
        self._queue.put(done, timeout=WAIT)
        assert done.wait(WAIT), "the test bus did not deliver"

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            with self._lock:
                subscribers = list(self._subscribers)
            for callback in subscribers:
                try:
                    callback(item)
                except BaseException as exc:  # reported by the tests, never lost
                    self.errors.append(exc)

    def close(self) -> None:
        self._queue.put(None, timeout=WAIT)
        self._thread.join(WAIT)
        assert not self._thread.is_alive()


class BrokenBus:
    """A bus that cannot be reached: every publish fails, nothing is ever delivered."""

    def __init__(self) -> None:
        self.attempts = 0

    def publish(self, message: BusMessage) -> None:
        self.attempts += 1
        raise StoreUnavailableError("the bus is down")

    def subscribe(self, callback: Callable[[BusMessage], None]) -> Callable[[], None]:
        return lambda: None

    def close(self) -> None:
        pass


def make_worker(store: TaskStore, gate: threading.Event) -> Server:
    """One worker's server: two resources, tasks that wait for ``gate`` (without
    checking for cancellation: only the relay can tell another worker's listen), and a
    stand-in auth layer taking the principal from ``_meta["test/user"]``."""
    server = Server("relay", request_state_key="k", task_store=store)

    @server.resource(NOTE)
    def note_a() -> str:
        return "a"

    @server.resource(SENTINEL)
    def sentinel() -> str:
        return "s"

    @server.tool(task="optional")
    def gated() -> str:
        assert gate.wait(2 * WAIT)
        return "done"

    @server.tool(task="optional")
    def big() -> str:
        assert gate.wait(2 * WAIT)
        return "x" * (2 * event_relay.MAX_EVENT_BYTES)

    @server.request_scope
    def authenticate(ctx: HandlerContext) -> Iterator[None]:
        ctx.transport.auth = {"subject": ctx.meta.get("test/user")}
        yield

    return server


class Listen:
    """A raw 2026-07-28 ``subscriptions/listen`` over HTTP as ``user``, read on its own
    thread; it always follows :data:`SENTINEL` too. Returns once acknowledged."""

    def __init__(self, http: RunningServer, user: str, **wanted: Any) -> None:
        wanted["resourceSubscriptions"] = [*wanted.get("resourceSubscriptions", ()), SENTINEL]
        body = {"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
            "notifications": wanted,
            "_meta": envelope(capabilities=V2_CAPS, **{"test/user": user})}}
        self.response = requests.post(http.base + "/mcp", data=json.dumps(body), stream=True,
                                      timeout=WAIT,
                                      headers=modern_headers("subscriptions/listen"))
        assert self.response.status_code == 200, self.response.text
        self.messages: list[dict[str, Any]] = []
        self._done = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, name=f"test-listen-{user}",
                                        daemon=True)
        self._thread.start()
        self.granted = self.wait_for(lambda ms: [m for m in ms if m.get("method") == ACK]
                                     )[0]["params"]["notifications"]

    def _read(self) -> None:
        reader = SseReader(self.response)
        try:
            while True:
                event = reader.next_event()
                if event is None:
                    return
                if event.get("data"):
                    with self._cond:
                        self.messages.append(json.loads(event["data"]))
                        self._cond.notify_all()
        except (requests.RequestException, OSError, ValueError):
            return
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def wait_for(self, found: Callable[[list[dict[str, Any]]], Any]) -> Any:
        with self._cond:
            self._cond.wait_for(lambda: found(self.messages) or self._done, WAIT)
            value = found(self.messages)
            assert value, self.messages
            return value

    def updated(self) -> list[str]:
        with self._cond:
            return [m["params"]["uri"] for m in self.messages if m.get("method") == UPDATED]

    def lists(self) -> list[str]:
        with self._cond:
            return [m["method"] for m in self.messages
                    if str(m.get("method")).endswith("/list_changed")]

    def statuses(self, task_id: str) -> list[str]:
        with self._cond:
            return [m["params"]["status"] for m in self.messages
                    if m.get("method") == TASKS and m["params"]["taskId"] == task_id]

    def task_notes(self) -> list[dict[str, Any]]:
        with self._cond:
            return [m for m in self.messages if m.get("method") == TASKS]

    def close(self) -> None:
        self._thread.join(WAIT)
        self.response.close()
        assert not self._thread.is_alive(), "the listen stream did not end"


class Workers:
    """Workers A and B, each on its own socket, both relaying on one bus."""

    def __init__(self, store: Callable[[], TaskStore], bus: Bus | None = None) -> None:
        self.gate = threading.Event()
        self.bus = QueueBus()
        self.a = make_worker(store(), self.gate)
        self.b = make_worker(store(), self.gate)
        self.http_a = RunningServer(self.a.wsgi_app())
        self.http_b = RunningServer(self.b.wsgi_app())
        self.stop_a = self.a.relay_events(bus or self.bus)
        self.stop_b = self.b.relay_events(bus or self.bus)
        self.listens: list[Listen] = []
        self.peers: list[Peer] = []

    def listen(self, http: RunningServer, user: str, **wanted: Any) -> Listen:
        listen = Listen(http, user, **wanted)
        self.listens.append(listen)
        return listen

    def peer(self, http: RunningServer) -> Peer:
        peer = Peer("http", "modern", http=http)
        self.peers.append(peer)
        return peer

    def settle(self, *listens: Listen) -> None:
        """Every message on the bus delivered, then a sentinel raised on A heard by each
        of ``listens``: anything due to them has arrived."""
        self.bus.drain()
        self.a.notify_resource_updated(SENTINEL)
        for listen in listens:
            listen.wait_for(lambda ms: SENTINEL in [m["params"]["uri"] for m in ms
                                                    if m.get("method") == UPDATED])

    def close(self) -> None:
        self.gate.set()
        self.stop_a()
        self.stop_b()
        for server in (self.a, self.b):
            server.end_subscriptions()
        for listen in self.listens:
            listen.close()
        for peer in self.peers:
            peer.close()
        self.http_a.stop()
        self.http_b.stop()
        for server in (self.a, self.b):
            assert server.close_tasks()
        self.bus.close()
        assert self.bus.errors == []


@pytest.fixture
def workers() -> Iterator[Workers]:
    shared = MemoryTaskStore()
    pair = Workers(lambda: shared)
    try:
        yield pair
    finally:
        pair.close()


def test_a_resource_updated_on_another_worker_reaches_a_listen_once(workers: Workers) -> None:
    here = workers.listen(workers.http_a, "alice", resourceSubscriptions=[NOTE])
    there = workers.listen(workers.http_b, "alice", resourceSubscriptions=[NOTE])
    legacy = Peer("memory", "legacy", server=workers.a)  # a handshake-era session on A
    workers.peers.append(legacy)
    for uri in (NOTE, SENTINEL):
        legacy.result("resources/subscribe", {"uri": uri})

    workers.b.notify_resource_updated(NOTE)

    here.wait_for(lambda ms: NOTE in [m["params"].get("uri") for m in ms])
    workers.settle(here, there)
    assert here.updated() == [NOTE, SENTINEL]
    assert there.updated() == [NOTE, SENTINEL]
    # Each event went on the bus once, from the worker that raised it: nothing re-published.
    assert [(m["uri"], m["origin"]) for m in workers.bus.events("resource_updated")] == [
        (NOTE, workers.b._relay.origin), (SENTINEL, workers.a._relay.origin)]
    # Sessions are not served from the bus (the session relay carries their updates).
    wait_until(lambda: any(n["method"] == UPDATED for n in legacy.notifications),
               timeout=WAIT)
    assert [n["params"]["uri"] for n in legacy.notifications
            if n["method"] == UPDATED] == [SENTINEL]


def test_a_list_change_raised_on_another_worker_reaches_a_listen_once(
        workers: Workers) -> None:
    here = workers.listen(workers.http_a, "alice", toolsListChanged=True)
    assert here.granted.get("toolsListChanged") is True

    @workers.b.tool()
    def added() -> str:  # registered while serving: B's tool list changed
        return "new"

    here.wait_for(lambda ms: [m for m in ms if m.get("method") == "notifications/tools/"
                              "list_changed"])
    workers.settle(here)
    assert here.lists() == ["notifications/tools/list_changed"]
    assert [m["list"] for m in workers.bus.events("list_changed")] == ["tools"]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_task_cancelled_through_another_worker_is_heard_once_by_its_owner_only(
        kind: str, tmp_path: Path) -> None:
    shared = MemoryTaskStore()
    path = tmp_path / "tasks.db"
    pair = Workers((lambda: shared) if kind == "memory" else (lambda: SqliteTaskStore(path)))
    try:
        task_id = pair.peer(pair.http_a).result(
            "tools/call", {"name": "gated"}, meta={"test/user": "alice"})["taskId"]
        hers = pair.listen(pair.http_a, "alice", taskIds=[task_id])
        his = pair.listen(pair.http_a, "bob", taskIds=[task_id])
        hers_on_b = pair.listen(pair.http_b, "alice", taskIds=[task_id])

        pair.peer(pair.http_b).result("tasks/cancel", {"taskId": task_id},
                                      meta={"test/user": "alice"})

        hers.wait_for(lambda ms: "cancelled" in [m["params"].get("status") for m in ms])
        # The task on A only now notices and ends; its own announcement of the same
        # change must not reach anyone a second time.
        pair.gate.set()
        wait_until(lambda: pair.a._tasks.runner.running() == 0, timeout=WAIT)
        pair.settle(hers, his, hers_on_b)
        assert hers.statuses(task_id) == ["cancelled"]
        assert hers_on_b.statuses(task_id) == ["cancelled"]
        assert his.task_notes() == []
    finally:
        pair.close()


@pytest.mark.parametrize("tool", ["gated", "big"])
def test_a_task_running_on_another_worker_reaches_its_owners_listen(
        workers: Workers, tool: str) -> None:
    task_id = workers.peer(workers.http_b).result(
        "tools/call", {"name": tool}, meta={"test/user": "alice"})["taskId"]
    hers = workers.listen(workers.http_a, "alice", taskIds=[task_id])
    his = workers.listen(workers.http_a, "bob", taskIds=[task_id])

    workers.gate.set()

    hers.wait_for(lambda ms: "completed" in [m["params"].get("status") for m in ms])
    workers.settle(hers, his)
    (completed,) = hers.task_notes()
    text = completed["params"]["result"]["content"][0]["text"]
    assert text == ("done" if tool == "gated" else "x" * (2 * event_relay.MAX_EVENT_BYTES))
    assert his.task_notes() == []
    events = workers.bus.events("status")
    assert events and all(m["field"] == "taskIds" and m["id"] == task_id for m in events)
    # A large status goes on the bus by reference; the listen read it from the store.
    assert all(("params" in m) == (tool == "gated") for m in events)


def test_a_bus_that_fails_leaves_each_change_working_here_and_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    broken = BrokenBus()
    pair = Workers(MemoryTaskStore, bus=broken)
    try:
        here = pair.listen(pair.http_a, "alice", resourceSubscriptions=[NOTE],
                           toolsListChanged=True)
        with caplog.at_level(logging.WARNING, logger="mcpsync"):
            pair.a.notify_resource_updated(NOTE)  # raised, not refused

            @pair.a.tool()
            def added() -> str:
                return "new"

        here.wait_for(lambda ms: NOTE in [m["params"].get("uri") for m in ms
                                          if m.get("method") == UPDATED])
        here.wait_for(lambda ms: [m for m in ms if m.get("method", "").endswith(
            "/list_changed")])
        assert broken.attempts == 2
        relayed = [r for r in caplog.records if "not relayed" in r.getMessage()]
        assert [r.levelno for r in relayed] == [logging.WARNING] * 2
        assert "the bus is down" in relayed[0].getMessage()
    finally:
        pair.close()


def test_malformed_bus_messages_are_ignored(workers: Workers) -> None:
    here = workers.listen(workers.http_a, "alice", resourceSubscriptions=[NOTE],
                          toolsListChanged=True, taskIds=["t1"])
    for junk in ({"kind": "event", "origin": "x", "event": "resource_updated", "uri": 5},
                 {"kind": "event", "origin": "x", "event": "list_changed", "list": "nope"},
                 {"kind": "event", "origin": "x", "event": "status", "field": "taskIds",
                  "id": "t1"},
                 {"kind": "event", "origin": "x", "event": "status", "field": "taskIds",
                  "id": "t1", "owner": "o", "version": "1"},
                 {"kind": "event", "origin": "x", "event": "status", "field": "nobody's",
                  "id": "t1", "owner": "o", "version": 1},
                 {"kind": "event", "origin": "x", "event": "what"},
                 {"kind": "answer", "origin": "x", "uri": NOTE},
                 {"kind": "event", "origin": "x", "event": "resource_updated", "uri": NOTE}):
        workers.bus.publish(junk)
    here.wait_for(lambda ms: NOTE in [m["params"].get("uri") for m in ms
                                      if m.get("method") == UPDATED])
    workers.settle(here)
    assert here.updated() == [NOTE, SENTINEL]
    assert here.lists() == [] and here.task_notes() == []


def test_stopping_the_relay_stops_delivery_and_publishing(workers: Workers) -> None:
    here = workers.listen(workers.http_a, "alice", resourceSubscriptions=[NOTE])
    workers.b.notify_resource_updated(NOTE)
    here.wait_for(lambda ms: NOTE in [m["params"].get("uri") for m in ms])
    assert workers.bus.subscribers() == 2

    workers.stop_a()
    workers.stop_a()  # idempotent
    assert workers.bus.subscribers() == 1
    workers.b.notify_resource_updated(NOTE)  # still published by B, no longer heard on A
    workers.settle(here)
    assert here.updated() == [NOTE, SENTINEL]
    assert len(workers.bus.events("resource_updated")) == 2  # A's sentinel: not published


def test_one_bus_attached_twice_publishes_and_delivers_once(workers: Workers) -> None:
    # relay_events by hand and an app given bus= (or two apps of one Server) attach the
    # same bus twice: one subscription, one publication per event.
    again = workers.a.relay_events(workers.bus)
    assert workers.bus.subscribers() == 2
    here = workers.listen(workers.http_a, "alice", resourceSubscriptions=[NOTE])
    workers.b.notify_resource_updated(NOTE)
    workers.a.notify_resource_updated(NOTE + "/a")
    workers.settle(here)
    assert sorted(here.updated()) == sorted([NOTE, NOTE + "/a", SENTINEL])  # each once
    assert len(workers.bus.events("resource_updated")) == 3
    again()
    assert workers.bus.subscribers() == 2  # A's first attach still holds
    workers.stop_a()
    assert workers.bus.subscribers() == 1


def test_a_cancelled_task_is_announced_once_in_one_process() -> None:
    """One worker, no bus: ``tasks/cancel`` announces the cancellation, and the task's
    runner announces the same change again when the task ends: heard once."""
    gate = threading.Event()
    server = make_worker(MemoryTaskStore(), gate)
    with RunningServer(server.wsgi_app()) as http:
        peer = Peer("http", "modern", http=http)
        task_id = peer.result("tools/call", {"name": "gated"},
                              meta={"test/user": "alice"})["taskId"]
        listen = Listen(http, "alice", taskIds=[task_id])
        try:
            peer.result("tasks/cancel", {"taskId": task_id}, meta={"test/user": "alice"})
            listen.wait_for(lambda ms: "cancelled" in [m["params"].get("status")
                                                       for m in ms])
            gate.set()
            wait_until(lambda: server._tasks.runner.running() == 0, timeout=WAIT)
            server.notify_resource_updated(SENTINEL)
            listen.wait_for(lambda ms: SENTINEL in [m["params"].get("uri") for m in ms
                                                    if m.get("method") == UPDATED])
            assert listen.statuses(task_id) == ["cancelled"]
        finally:
            gate.set()
            server.end_subscriptions()
            listen.close()
            peer.close()
            assert server.close_tasks()


def _origin_in_child(server: Server, out: Any) -> None:
    out.send(server._relay.origin)


def test_each_forked_worker_has_its_own_origin() -> None:
    """A Server built before the workers fork (gunicorn ``--preload``) gives each worker
    its own id on the bus; one shared id would make each skip the others' events."""
    server = Server("preloaded")
    parent = server._relay.origin
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_origin_in_child, args=(server, send),
                            name="test-forked-worker")
    child.start()
    try:
        assert receive.poll(WAIT)
        assert receive.recv() not in ("", parent)
    finally:
        child.join(WAIT)
    assert child.exitcode == 0
    assert server._relay.origin == parent


def test_a_listen_holds_the_latest_status_of_each_task_in_change_order() -> None:
    """Statuses that come faster than a client reads (or late, through the bus) leave one
    pending notification per task: the newest version, after the changes before it."""
    registry = ListenRegistry()
    registry.follow(Followed("taskIds", TASKS, lambda item_id, owner: None))
    listener = Listener(1, {"taskIds": ["t"], "resourceSubscriptions": [NOTE]},
                        owner=object(), principal="p", followed=["taskIds"])
    registry.add(listener)

    def status(name: str, message: str) -> dict[str, Any]:
        return {"taskId": "t", "status": name, "statusMessage": message}

    registry.status("taskIds", "t", "p", status("input_required", "first"), version=3)
    registry.status("taskIds", "t", "p", status("working", "answered"), version=5)
    registry.resource_updated(NOTE)
    registry.status("taskIds", "t", "p", status("input_required", "again"), version=7)
    registry.status("taskIds", "t", "p", status("working", "late"), version=6)  # stale: dropped
    registry.status("taskIds", "t", "p", status("working", "twice"), version=7)  # heard twice
    registry.status("taskIds", "t", "someone else", status("completed", "not theirs"), version=9)
    assert listener.take() == [(UPDATED, {"uri": NOTE}),
                               (TASKS, status("input_required", "again"))]
    registry.status("taskIds", "t", "p", status("working", "old"), version=7)
    assert listener.take() == []


def test_a_listen_over_the_memory_transport_hears_another_worker(workers: Workers) -> None:
    """The relay feeds the listen registry, whatever transport holds the listen."""
    with Client.memory(workers.a, protocol_version="2026-07-28") as client:
        subscription = client.listen(resource_uris=[NOTE], tools=False, prompts=False,
                                     resources=False)
        try:
            workers.b.notify_resource_updated(NOTE)
            note = subscription.get(timeout=WAIT)
            assert note is not None and note.uri == NOTE
            workers.b.notify_resource_updated(NOTE + "/b")  # next, not NOTE a second time
            later = subscription.get(timeout=WAIT)
            assert later is not None and later.uri == NOTE + "/b"
        finally:
            subscription.close()
