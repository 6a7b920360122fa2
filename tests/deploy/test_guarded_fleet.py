"""The guards of issue 40 on a fleet: nginx round-robin over two gunicorn instances of two
workers each (``tests/deploy/topology.py``), every worker with the guards of
``tests/deploy/guarded_app.py`` on one redis-server. A limit, a slot or a cached answer in
one worker's memory would be wrong here (four workers, two "machines"): each check below
fails unless the guard's state is the fleet's.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client
from mcpsync.middleware import RateLimitedError
from tests.deploy import topology as topology_module
from tests.deploy.conftest import TopologyMaker
from tests.deploy.topology import Topology
from tests.helpers import WAIT
from tests.http.raw import post_modern
from tests.services import RedisServer, require_redis_library, unique_prefix

require_redis_library()

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class Fleet:
    def __init__(self, topology: Topology, redis_url: str, prefix: str, audit: Path) -> None:
        self.topology = topology
        self.redis_url = redis_url
        self.prefix = prefix
        self.audit = audit

    def client(self, url: str | None = None, version: str = MODERN,
               **headers: str) -> Client:
        return Client.http(url or self.topology.url, protocol_version=version,
                           headers={k.replace("_", "-"): v for k, v in headers.items()},
                           timeout=WAIT)

    def audit_records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for path in sorted(self.audit.glob("audit-*.jsonl"))
                for line in path.read_text().splitlines() if line]


@pytest.fixture(scope="module")
def fleet(module_topologies: TopologyMaker) -> Iterator[Fleet]:
    with RedisServer() as redis_server, pytest.MonkeyPatch.context() as patch:
        patch.setattr(topology_module, "APP", "tests.deploy.guarded_app:app")
        audit = module_topologies.base / "audit"
        audit.mkdir()
        prefix = unique_prefix("fleet")
        topology = module_topologies(env={
            "MCPSYNC_DEPLOY_STORE": "redis", "MCPSYNC_DEPLOY_REDIS_URL": redis_server.url,
            "MCPSYNC_DEPLOY_REDIS_PREFIX": prefix, "MCPSYNC_DEPLOY_AUDIT_DIR": str(audit)})
        yield Fleet(topology, redis_server.url, prefix, audit)
        topology.stop()
    problems = module_topologies.problems()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_a_20_per_minute_limit_serves_20_of_60_calls_across_the_fleet(
        fleet: Fleet, version: str) -> None:
    # nginx appends the client's address to X-Forwarded-For and the app trusts nginx: the
    # address a client claims before it is its key (one per era here, so that each era
    # starts with a full minute).
    address = {MODERN: "203.0.113.10", LEGACY: "203.0.113.11"}[version]
    served: list[dict[str, Any]] = []
    refused: list[float] = []
    with fleet.client(version=version, X_Forwarded_For=address) as client:
        for _ in range(60):
            try:
                served.append(dict(client.call_tool("whoami").structured_content or {}))
            except RateLimitedError as exc:
                refused.append(exc.retry_after)
    assert len(served) == 20 and len(refused) == 40
    assert all(0 < wait <= 60 for wait in refused)
    # Served by every instance and more than one worker: the count was the fleet's.
    assert {s["instance"] for s in served} == {"a", "b"}
    assert len({s["pid"] for s in served}) >= 2
    if version == MODERN:  # on the wire: 429, Retry-After, the JSON-RPC error in the body
        response = post_modern(fleet.topology.url, "tools/call", {"name": "whoami"},
                               headers={"X-Forwarded-For": address})
        assert response.status_code == 429
        assert 1 <= int(response.headers["Retry-After"]) <= 60
        assert response.json()["error"]["code"] == -32029


def test_a_concurrency_limit_of_2_per_principal_holds_across_instances(fleet: Fleet) -> None:
    import redis

    a, b = (instance.url for instance in fleet.topology.instances)
    release = redis.Redis.from_url(fleet.redis_url)
    key = f"release-{os.urandom(4).hex()}"
    started = [threading.Event() for _ in range(3)]
    results: dict[int, Any] = {}

    def hold(index: int, url: str, user: str) -> None:
        with fleet.client(url, X_User=user) as client:
            results[index] = client.call_tool(
                "hold", {"key": key},
                on_progress=lambda *_: started[index].set()).structured_content

    threads = [threading.Thread(target=hold, args=args, name=f"test-fleet-hold-{args[0]}")
               for args in ((0, a, "alice"), (1, b, "alice"), (2, a, "bob"))]
    try:
        for thread, event in zip(threads[:2], started[:2], strict=True):
            thread.start()
            assert event.wait(WAIT), "a hold never started"
        # alice holds one slot on each instance: a third call, wherever it lands, is over.
        for url in (a, b, fleet.topology.url):
            with fleet.client(url, X_User="alice") as client:
                with pytest.raises(RateLimitedError) as over:
                    client.call_tool("hold", {"key": key})
                assert over.value.retry_after == 1.0
        threads[2].start()  # bob is not alice: his call runs
        assert started[2].wait(WAIT), "bob's hold was refused or never started"
    finally:
        release.rpush(f"{fleet.prefix}:{key}", *["go"] * 3)
        for thread in threads:
            if thread.is_alive() or thread.ident is not None:
                thread.join(WAIT)
        release.close()
    assert sorted(results) == [0, 1, 2]
    assert results[0]["instance"] == "a" and results[1]["instance"] == "b"
    assert not any(thread.is_alive() for thread in threads)
    release = redis.Redis.from_url(fleet.redis_url)
    try:  # the slots were given back: alice may hold again
        release.rpush(f"{fleet.prefix}:{key}", "go")
        with fleet.client(X_User="alice") as client:
            assert client.call_tool("hold", {"key": key}).structured_content["pid"]
    finally:
        release.close()


def test_the_cache_serves_a_second_principal_its_own_answer(fleet: Fleet) -> None:
    a, b = (instance.url for instance in fleet.topology.instances)
    with fleet.client(a, X_User="carol") as on_a, fleet.client(b, X_User="carol") as on_b:
        first = on_a.call_tool("profile").structured_content
        assert on_b.call_tool("profile").structured_content == first  # a's answer, from Redis
    assert first["instance"] == "a" and first["user"] == "carol"
    with fleet.client(b, X_User="dave") as dave:
        own = dave.call_tool("profile").structured_content
    assert own["user"] == "dave" and own["instance"] == "b"


def test_the_audit_log_has_one_record_per_call_with_its_trace_id(fleet: Fleet) -> None:
    traces = [os.urandom(16).hex() for _ in range(8)]
    with fleet.client(X_User="erin", X_Forwarded_For="198.51.100.7") as client:
        for trace in traces:
            client.call_tool("echo", {"text": "hi"},
                             meta={"traceparent": f"00-{trace}-{os.urandom(8).hex()}-01"})
    records = fleet.audit_records()
    for trace in traces:
        mine = [r for r in records if r.get("traceId") == trace]
        assert len(mine) == 1, (trace, mine)
        assert mine[0]["method"] == "tools/call" and mine[0]["tool"] == "echo"
        assert mine[0]["outcome"] == "ok" and mine[0]["arguments"] == {"text": "[redacted]"}
        assert mine[0]["client"] == "198.51.100.7"  # behind nginx, which the log trusts
        assert len(mine[0]["principal"]) == 32
    # Written by more than one worker: the records are the fleet's, one file per worker.
    writers = {path.name for path in fleet.audit.glob("audit-*.jsonl")
               if any(trace in path.read_text() for trace in traces)}
    assert len(writers) >= 2
