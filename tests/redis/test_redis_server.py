"""The run's real Redis (``tests/services.py``): started on a free loopback port, reachable,
and stopped by its PID; a private one can be taken away and given back on the same URL."""

from __future__ import annotations

import os

import pytest

from tests.services import RedisServer


def test_the_shared_server_answers(redis_url: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        assert client.ping() is True
    finally:
        client.close()


def test_a_private_server_restarts_on_the_same_url() -> None:
    import redis

    with RedisServer() as server:
        client = redis.Redis.from_url(server.url, socket_timeout=5)
        try:
            client.set("k", "v")
            pid = server.pid
            assert pid is not None
            server.kill()
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)  # gone, and reaped
            with pytest.raises(redis.exceptions.ConnectionError):
                client.ping()
            server.start()
            assert client.ping() is True
            assert client.get("k") is None  # no persistence: a fresh server
        finally:
            client.close()
