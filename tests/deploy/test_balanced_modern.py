"""The 2026-07-28 wire through a real balancer: nginx round-robin (no stickiness) over two
gunicorn instances (``-w 2 -k gthread``), standing for two machines. Needs no shared store:
only the ``request_state_key`` that seals multi round-trip state, and, for tasks, one
SQLite task store file (the instances share a host here).

Driven with mcpsync's ``Client.http`` and with the official SDK's client (mcp 2.3.0).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync import Client, ElicitResult, HostHandlers, MCPError, MCPSyncError, Progress
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import wait_until
from tests.interop.peers import run_official_client

from .conftest import KEY, MakeTopology
from .topology import Topology

MODERN = "2026-07-28"
ROOT = Path(__file__).resolve().parents[2]


def modern_client(url: str, **options: Any) -> Client:
    return Client.http(url, protocol_version=MODERN, timeout=WAIT, **options)


def answer_grace(params: Any) -> ElicitResult:
    return ElicitResult("accept", {"name": "Grace"})


def asked_by(message: str) -> str:
    """The instance named in ``ask``'s question ("Your name? asked by a:1234")."""
    return message.rsplit(" ", 1)[1].split(":")[0]


def raw_post(url: str, method: str, params: dict[str, Any], **kwargs: Any) -> requests.Response:
    """One 2026-07-28 request on its own connection, with its envelope and headers."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": method, "Connection": "close"}
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    return requests.post(url, headers=headers, timeout=WAIT, json={
        "jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}},
        **kwargs)


def upstreams_of(topology: Topology) -> list[list[int]]:
    """The upstream ports each POST went to, in the order nginx finished them (its access
    log: ``upstream=127.0.0.1:A, 127.0.0.1:B`` is a request retried on B)."""
    lines = (topology.nginx_dir / "access.log").read_text().splitlines()
    found = []
    for line in lines:
        if '"POST ' in line:
            field = line.split("upstream=", 1)[1].split(" upstream_status=")[0]
            found.append([int(addr.rsplit(":", 1)[1]) for addr in field.split(", ")])
    return found


# -- the topology itself ------------------------------------------------------------------


def test_the_balancer_alternates_between_instances_with_no_stickiness(balanced: Topology):
    with modern_client(balanced.url) as client:
        answers = [client.call_tool("whoami", {}).structured_content for _ in range(8)]
    instances = [answer["instance"] for answer in answers]  # type: ignore[index]
    assert set(instances) == {"a", "b"}
    # One client, one request after another: never twice in a row on one instance.
    assert all(x != y for x, y in itertools.pairwise(instances)), instances
    # Each answer names the port of the instance it came from (two "machines").
    ports = {answer["instance"]: answer["port"] for answer in answers}  # type: ignore[index]
    assert ports == {i.name: i.port for i in balanced.instances}


def test_many_calls_spread_over_all_four_workers(balanced: Topology):
    """Concurrent calls open several upstream connections, which land on both workers of
    each instance; every call is answered, whichever worker takes it."""
    seen: set[tuple[str, int]] = set()
    lock = threading.Lock()
    failures: list[BaseException] = []

    def caller() -> None:
        try:
            with modern_client(balanced.url) as client:
                for _ in range(3):
                    result = client.call_tool("block", {"ms": 200})
                    assert result.text == "blocked 200 ms"
                    who = client.call_tool("whoami", {}).structured_content
                    with lock:
                        seen.add((who["instance"], who["pid"]))  # type: ignore[index]
        except BaseException as exc:  # reported below, on the test's thread
            failures.append(exc)

    def round_of_calls() -> bool:
        threads = [threading.Thread(target=caller, name=f"deploy-caller-{i}")
                   for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert not failures, failures
        assert not any(thread.is_alive() for thread in threads)
        return len(seen) == 4

    wait_until(round_of_calls, timeout=4 * WAIT, interval=0.0,
               message=lambda: f"workers seen: {sorted(seen)}")
    assert {instance for instance, _ in seen} == {"a", "b"}


# -- multi round-trip requests: the shared key ---------------------------------------------


def test_an_elicitation_retry_is_accepted_on_the_other_instance(balanced: Topology):
    questions: list[str] = []

    def answer(params: Any) -> ElicitResult:
        questions.append(params.message)
        return answer_grace(params)

    with modern_client(balanced.url, host=HostHandlers(elicitation=answer)) as client:
        for _ in range(4):
            result = client.call_tool("ask", {})
            finished = result.structured_content
            assert finished["name"] == "Grace", result  # type: ignore[index]
            # The retry (with the sealed requestState) was the next request through the
            # balancer, so the other instance ran the handler to its end.
            assert finished["instance"] != asked_by(questions[-1])  # type: ignore[index]


def test_with_different_keys_the_retry_on_the_other_instance_is_refused(
        make_topology: MakeTopology):
    """Why every instance needs the same ``request_state_key``: state sealed by one
    instance's key is refused by the other, so a multi round-trip call cannot finish
    when its retry is balanced elsewhere."""
    topology = make_topology(instance_env={"a": {"MCPSYNC_REQUEST_STATE_KEY": "key-of-a"},
                                           "b": {"MCPSYNC_REQUEST_STATE_KEY": "key-of-b"}})
    with (modern_client(topology.url, host=HostHandlers(elicitation=answer_grace)) as client,
          pytest.raises(MCPError) as refused):
        client.call_tool("ask", {})
    assert refused.value.code == -32602, refused.value
    assert "requestState" in str(refused.value) or "state" in str(refused.value).lower()
    # Each instance alone is fine: its own key opens its own state.
    for instance in topology.instances:
        with modern_client(instance.url, host=HostHandlers(elicitation=answer_grace)) as client:
            assert client.call_tool("ask", {}).structured_content["name"] == "Grace"  # type: ignore[index]


# -- tasks on one SQLite file shared by both instances (same host) --------------------------


@pytest.fixture
def sqlite_tasks(make_topology: MakeTopology, tmp_path: Path) -> Topology:
    return make_topology(env={"MCPSYNC_DEPLOY_STORE": "sqlite",
                              "MCPSYNC_DEPLOY_SQLITE": str(tmp_path / "tasks.db")})


def test_a_task_created_on_one_instance_is_polled_and_finished_through_the_other(
        sqlite_tasks: Topology):
    a, b = sqlite_tasks.instance("a"), sqlite_tasks.instance("b")
    with modern_client(a.url) as on_a:
        handle = on_a.start_task("slow", {"seconds": 1.0})
        assert handle.id is not None
    with modern_client(b.url) as on_b:
        polled = on_b.task(handle.id)
        assert polled.status().status in ("working", "completed")
        result = polled.result(timeout=WAIT)
    assert result.structured_content["instance"] == "a"  # type: ignore[index]
    # And through the balancer, whichever instance answers each poll.
    with modern_client(sqlite_tasks.url) as balanced:
        for _ in range(4):
            assert balanced.task(handle.id).status().status == "completed"


def test_a_task_cancelled_through_the_other_instance_is_cancelled_everywhere(
        sqlite_tasks: Topology):
    a, b = sqlite_tasks.instance("a"), sqlite_tasks.instance("b")
    with modern_client(a.url) as on_a, modern_client(b.url) as on_b:
        handle = on_a.start_task("slow", {"seconds": 120.0})
        assert handle.id is not None
        assert on_b.task(handle.id).status().status == "working"
        on_b.task(handle.id).cancel()
        assert on_a.task(handle.id).status().status == "cancelled"
    with modern_client(sqlite_tasks.url) as balanced:
        for _ in range(4):
            assert balanced.task(handle.id).status().status == "cancelled"


# -- faults: an instance dies ---------------------------------------------------------------


def test_a_killed_instance_is_routed_around(own_balanced: Topology):
    balanced = own_balanced  # it kills an instance
    with modern_client(balanced.url) as client:
        assert {client.call_tool("whoami", {}).structured_content["instance"]  # type: ignore[index]
                for _ in range(2)} == {"a", "b"}
        balanced.kill_instance("b")
        # A refused connection is retried on the next instance (nothing reached b): no
        # request fails, every answer now comes from a.
        answers = [client.call_tool("whoami", {}).structured_content for _ in range(8)]
    assert {answer["instance"] for answer in answers} == {"a"}  # type: ignore[index]
    a, b = balanced.instance("a").port, balanced.instance("b").port
    retried = [ports for ports in upstreams_of(balanced) if len(ports) > 1]
    # Only the first request after the kill tried b; then nginx left b out (max_fails=1).
    assert retried == [[b, a]], upstreams_of(balanced)


def test_a_call_in_flight_on_a_killed_instance_fails_and_is_not_replayed(own_balanced: Topology):
    """A POST that reached an instance is never re-sent by the balancer (a tool call is not
    idempotent): the client gets an error, and decides itself whether to call again."""
    balanced = own_balanced  # it kills an instance
    response = raw_post(balanced.url, "tools/call",
                        {"name": "block", "arguments": {"ms": 30_000}}, stream=True)
    # The call outlives the JSON window, so its SSE headers (naming the instance) are out.
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    victim = response.headers["X-Deploy-Instance"]
    balanced.kill_instance(victim)
    with pytest.raises(requests.RequestException):
        for _ in response.iter_content(chunk_size=None):
            pass
    response.close()
    survivor = ({"a", "b"} - {victim}).pop()
    with modern_client(balanced.url) as client:
        for _ in range(4):
            who = client.call_tool("whoami", {}).structured_content
            assert who["instance"] == survivor  # type: ignore[index]
    # The balancer's log: the killed call went to its instance only (no second attempt),
    # and every later call was answered by the survivor (the dead instance refusing the
    # connection first, at most: "upstream=dead, survivor").
    killed_call, *later = upstreams_of(balanced)
    assert killed_call == [balanced.instance(victim).port]
    assert len(later) >= 4
    assert all(ports[-1] == balanced.instance(survivor).port for ports in later), later


def test_a_killed_instance_s_call_surfaces_as_an_error_in_the_client(own_balanced: Topology):
    balanced = own_balanced  # it kills an instance
    errors: list[BaseException] = []
    outcome: list[Any] = []
    started = threading.Event()
    victims: list[str] = []

    def on_progress(progress: Progress) -> None:
        if not started.is_set():
            victims.append((progress.message or "").rsplit(" ", 1)[-1])
            started.set()

    def call() -> None:
        try:
            with modern_client(balanced.url) as client:
                outcome.append(client.call_tool("ticks", {"count": 600, "ms": 50},
                                                on_progress=on_progress))
        except BaseException as exc:  # checked below, on the test's thread
            errors.append(exc)

    thread = threading.Thread(target=call, name="deploy-doomed-call")
    thread.start()
    assert started.wait(WAIT), "the call never reported progress"
    balanced.kill_instance(victims[0])  # the instance that runs the call ("tick 1 on a")
    thread.join(WAIT)
    assert not thread.is_alive()
    assert not outcome, outcome
    assert len(errors) == 1 and isinstance(errors[0], MCPSyncError), errors


def test_a_client_that_leaves_cancels_its_call_through_the_balancer(
        make_topology: MakeTopology, tmp_path: Path):
    """In 2026-07-28 closing the connection is the cancellation: nginx closes its own
    connection to the instance when the client's goes (proxy_ignore_client_abort off),
    and the handler on the instance sees it."""
    marks = tmp_path / "marks"
    marks.mkdir()
    topology = make_topology(env={"MCPSYNC_DEPLOY_MARKS": str(marks)})
    response = raw_post(topology.url, "tools/call",
                        {"name": "wait_for_cancel", "arguments": {"mark": "left"}},
                        stream=True)
    assert response.headers["Content-Type"].startswith("text/event-stream")
    instance = response.headers["X-Deploy-Instance"]
    response.close()  # the client leaves
    mark = marks / "left.cancelled"
    wait_until(mark.exists, timeout=WAIT, interval=0.05,
               message="the handler was never cancelled")
    assert mark.read_text() == instance


# -- the official SDK's client through the balancer ------------------------------------------


def official(url: str, *args: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return run_official_client(["--mode", "modern", *args], url=url, env=env, timeout=WAIT * 2)


@pytest.mark.interop
def test_official_client_calls_spread_over_both_instances(balanced: Topology):
    report = official(balanced.url, "concurrent", "whoami", "{}", "8")
    assert report["protocolVersion"] == MODERN
    results = report["results"]
    assert all("error" not in r for r in results), results
    instances = [r["result"]["structuredContent"]["instance"] for r in results]
    assert set(instances) == {"a", "b"}, instances


@pytest.mark.interop
def test_official_client_elicitation_retry_lands_on_the_other_instance(balanced: Topology):
    report = official(balanced.url, "--elicit-json", '{"name": "Grace"}', "call", "ask", "{}")
    finished = report["result"]["structuredContent"]
    assert finished["name"] == "Grace"
    [question] = [r for r in report["serverRequests"]
                  if r["method"] == "elicitation/create"]
    assert finished["instance"] != asked_by(question["params"]["message"]), report


@pytest.mark.interop
def test_official_client_is_refused_when_the_keys_differ(make_topology: MakeTopology):
    topology = make_topology(instance_env={"a": {"MCPSYNC_REQUEST_STATE_KEY": "key-of-a"},
                                           "b": {"MCPSYNC_REQUEST_STATE_KEY": "key-of-b"}})
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    report = run_official_client(
        ["--mode", "modern", "--elicit-json", '{"name": "Grace"}', "call", "ask", "{}"],
        url=topology.url, env=env, timeout=WAIT * 2, check=False)
    assert not report.get("ok"), report
    assert KEY not in json.dumps(report)
