"""Every fetch of the auth code ends within its ``timeout``, all of it (issue 25, #1).

A server that trickles its answer (one byte every 0.2 s here) never trips a per-read
timeout: with ``timeout=(t, t)`` alone each of these waited the whole trickle (20 s), and
a ``JwtVerifier`` refreshing its key set held its lock meanwhile, so tokens whose key was
cached waited too. The cases: the JWKS of a ``JwtVerifier`` (and a cached key while such a
fetch runs), an ``IntrospectionVerifier``'s answer, the OAuth client's ``Fetcher``, its
metadata discovery (one deadline for the whole walk), ``FollowRedirects``, and a
connection trickling its request to a ``LoopbackRedirect`` (which serves one at a time).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from mcpsync import AuthorizationError, IntrospectionVerifier, JwtVerifier, OAuthLimits
from mcpsync.auth import DiscoveryError, FollowRedirects, LoopbackRedirect, OAuth
from mcpsync.auth.fetch import Fetcher
from mcpsync.protocol.deadline import DeadlineExceeded
from tests.helpers import require_module
from tests.transports.hostile import RawHttpServer, RawRequest, trickle_body, trickle_head

from .authserver import AuthServer

require_module("jwt")

AUDIENCE = "https://rs.example/mcp"
TRICKLE = 100  # bytes at 0.2 s each: 20 s when nothing but per-read timeouts ends it
BOUND = 5.0  # "ends within": the deadlines below are 1 s, the old code took 20 s


def trickling(body: bytes) -> Callable[[RawRequest], None]:
    """``body`` after ``TRICKLE`` spaces sent one by one (valid JSON when it ends)."""
    return trickle_body(body, count=TRICKLE, pause=0.2)


@pytest.fixture
def raw() -> Iterator[Callable[[Callable[[RawRequest], None]], RawHttpServer]]:
    """``raw(script)``: a RawHttpServer, stopped (and its scripts woken) after the test."""
    started: list[RawHttpServer] = []

    def start(script: Callable[[RawRequest], None]) -> RawHttpServer:
        started.append(RawHttpServer(script))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _jwks_of(auth: AuthServer) -> bytes:
    auth.mint(audience=AUDIENCE)  # makes the first signing key
    return requests.get(auth.jwks_url, timeout=10).content


def test_a_trickling_jwks_refuses_an_unknown_kid_within_the_timeout(
        jwt_auth: AuthServer, raw: Any) -> None:
    server = raw(trickling(_jwks_of(jwt_auth)))
    verifier = JwtVerifier(server.url, issuer=jwt_auth.issuer, audience=AUDIENCE, timeout=1)
    started = time.monotonic()
    assert verifier.verify(jwt_auth.mint(audience=AUDIENCE)) is None
    assert time.monotonic() - started < BOUND


@pytest.mark.parametrize("lifespan", [300, 0], ids=["fresh", "stale"])
def test_a_cached_key_verifies_while_a_refresh_trickles(
        jwt_auth: AuthServer, raw: Any, lifespan: int) -> None:
    # The first fetch is answered at once, every later one trickles. While a token with an
    # unknown kid holds a refresh, a token whose kid is cached verifies at once, from
    # another thread -- even when the cached document is past its lifespan (stale keys
    # are served meanwhile).
    document = _jwks_of(jwt_auth)

    def script(request: RawRequest) -> None:
        if len(request.server.seen("GET")) == 1:
            request.send_body(document)
        else:
            trickling(document)(request)

    server = raw(script)
    verifier = JwtVerifier(server.url, issuer=jwt_auth.issuer, audience=AUDIENCE, timeout=3,
                           refresh_cooldown=0, jwks_cache_seconds=lifespan)
    good = jwt_auth.mint(audience=AUDIENCE)
    assert verifier.verify(good) is not None
    unknown = jwt_auth.mint(audience=AUDIENCE, kid="rotated-away")
    outcome: list[Any] = []
    done = threading.Event()

    def refresh() -> None:
        try:
            outcome.append(verifier.verify(unknown))
        finally:
            done.set()

    thread = threading.Thread(target=refresh, name="test-jwks-refresh")
    thread.start()
    try:
        assert server.wait_for(lambda: len(server.seen("GET")) >= 2, timeout=BOUND)
        verified = verifier.verify(good)
        assert verified is not None and verified.subject == "alice"
        assert not done.is_set(), "the cached key waited for the refresh"
        assert len(server.seen("GET")) == 2  # single flight: no second refresh meanwhile
    finally:
        thread.join(BOUND + 3)
    assert not thread.is_alive() and outcome == [None]  # ended by its own deadline


def test_a_token_waiting_for_the_refresh_in_flight_gets_its_outcome(
        jwt_auth: AuthServer, raw: Any) -> None:
    # A second unknown kid during a refresh does not start another fetch: it waits for
    # that one (bounded by its own deadline) and is refused with it.
    server = raw(trickling(_jwks_of(jwt_auth)))
    verifier = JwtVerifier(server.url, issuer=jwt_auth.issuer, audience=AUDIENCE, timeout=1,
                           refresh_cooldown=0)
    results: list[Any] = []
    tokens = [jwt_auth.mint(audience=AUDIENCE, kid=f"k{n}") for n in range(3)]
    threads = [threading.Thread(target=lambda t=token: results.append(verifier.verify(t)),
                                name=f"test-verify-{n}") for n, token in enumerate(tokens)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND + 3)
    assert results == [None, None, None]
    assert time.monotonic() - started < BOUND
    assert len(server.seen("GET")) == 1


def test_a_trickling_introspection_answer_refuses_within_the_timeout(raw: Any) -> None:
    answer = json.dumps({"active": True, "sub": "alice", "client_id": "c1"}).encode()
    server = raw(trickling(answer))
    verifier = IntrospectionVerifier(server.url, timeout=1)
    started = time.monotonic()
    assert verifier.verify("opaque-token") is None
    assert time.monotonic() - started < BOUND


def test_the_oauth_fetcher_ends_a_trickle_at_its_timeout(raw: Any) -> None:
    server = raw(trickling(b'{"issuer": "x"}'))
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        Fetcher(timeout=1).get_json(server.url)
    assert time.monotonic() - started < BOUND


def test_metadata_discovery_shares_one_deadline_across_the_well_known_urls(
        raw: Any) -> None:
    # The MCP endpoint challenges; every metadata URL trickles. Discovery gives up when
    # its one budget is spent, after the first URL, instead of trying each for the whole
    # timeout (or, with per-read timeouts, for the whole trickle).
    def script(request: RawRequest) -> None:
        if request.path.startswith("/mcp"):
            metadata = request.server.url.replace("/mcp", "/.well-known/hinted")
            request.send_body(b"{}", status=401,
                              WWW_Authenticate=f'Bearer resource_metadata="{metadata}"')
        else:
            trickling(b"{}")(request)

    server = raw(script)
    oauth = OAuth(client_id="c1", redirect_handler=FollowRedirects(timeout=1),
                  limits=OAuthLimits(fetch_timeout=1))
    started = time.monotonic()
    with pytest.raises(DiscoveryError, match="discovery budget"):
        requests.get(server.url, auth=oauth, timeout=10)
    assert time.monotonic() - started < BOUND
    assert [r.path for r in server.seen("GET") if "well-known" in r.path] == [
        "/.well-known/hinted"]
    assert issubclass(DiscoveryError, AuthorizationError)


def test_follow_redirects_ends_a_trickled_head_at_its_timeout(raw: Any) -> None:
    server = raw(trickle_head("302 Found", count=TRICKLE, pause=0.2))
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        FollowRedirects(timeout=1)(server.url + "?redirect_uri=http://127.0.0.1:9/cb")
    assert time.monotonic() - started < BOUND


def test_a_trickling_connection_does_not_hold_the_loopback_listener() -> None:
    # The listener serves one connection at a time: one that trickles its request head
    # used to keep the browser's redirect waiting for the whole trickle.
    stop = threading.Event()
    threads: list[threading.Thread] = []
    landed: list[int] = []

    def trickle(sock: socket.socket) -> None:
        with sock:
            try:
                for _ in range(TRICKLE):
                    if stop.wait(0.2):
                        return
                    sock.sendall(b"X")
            except OSError:
                return  # shut down by the listener: the point

    def opener(url: str) -> None:
        slow = socket.create_connection(("127.0.0.1", loopback.port), timeout=10)
        slow.sendall(b"GET /slow HTTP/1.1\r\n")
        callback = loopback.redirect_uri + "?code=c&state=s"
        threads.append(threading.Thread(target=trickle, args=(slow,), name="test-trickler"))
        threads.append(threading.Thread(
            target=lambda: landed.append(requests.get(callback, timeout=10).status_code),
            name="test-browser"))
        for thread in threads:
            thread.start()

    started = time.monotonic()
    try:
        with LoopbackRedirect(timeout=10, request_timeout=1, opener=opener) as loopback:
            returned = loopback("https://as.example/authorize")
    finally:
        stop.set()
        for thread in threads:
            thread.join(BOUND)
    assert returned.endswith("/callback?code=c&state=s") and landed == [200]
    assert time.monotonic() - started < BOUND
