"""A store that is down is answered 503 with a generic text: where the store is (Redis's
host and port, a store file's path) is the operator's, in the log, not the caller's
(issue 40's class: the proxy's errors showed its callers the target's internal URL)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.services import RedisServer, require_redis_library


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    require_redis_library()
    with RedisServer() as server:
        yield server


def test_a_store_that_is_down_is_a_generic_503_and_the_log_says_where(
        serve, private_redis, caplog: pytest.LogCaptureFixture) -> None:
    from mcpsync.redis import RedisSessionStore
    from tests.http.test_session_store import call_who, initialize, worker_server

    where = urlsplit(private_redis.url)
    address = f"{where.hostname}:{where.port}"
    a = serve(worker_server("a"), session_store=RedisSessionStore(private_redis.url))
    b = serve(worker_server("b"), session_store=RedisSessionStore(private_redis.url))
    session_id = initialize(a.url)
    private_redis.kill()
    with caplog.at_level(logging.WARNING, logger="mcpsync"):
        response = call_who(b.url, session_id)
    assert response.status_code == 503
    assert response.headers.get("Retry-After")
    message = response.json()["error"]["message"]
    assert message.startswith("Service unavailable"), message
    assert address not in response.text and str(where.port) not in message, response.text
    assert any(address in record.getMessage() for record in caplog.records), caplog.text
