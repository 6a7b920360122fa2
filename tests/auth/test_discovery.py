"""Discovery against real servers: the well-known fallbacks in the specification's order,
the issuer check, the 2025-03-26 back-compat defaults, and the bounds on what is read."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsync import DiscoveryError
from mcpsync.auth.challenge import parse
from mcpsync.auth.discovery import (
    as_metadata_candidates,
    canonical_resource,
    discover_resource,
    discover_server,
    prm_candidates,
    resource_covers,
)
from mcpsync.auth.fetch import Fetcher
from tests.serving import RunningServer

from .authserver import AuthServer, _json


def test_candidate_order():
    assert prm_candidates("http://h:1/a/mcp", None) == [
        "http://h:1/.well-known/oauth-protected-resource/a/mcp",
        "http://h:1/.well-known/oauth-protected-resource"]
    assert prm_candidates("http://h:1/mcp", "http://h:1/custom.json")[0] == (
        "http://h:1/custom.json")
    assert as_metadata_candidates("https://as.example/tenant1") == [
        "https://as.example/.well-known/oauth-authorization-server/tenant1",
        "https://as.example/.well-known/openid-configuration/tenant1",
        "https://as.example/tenant1/.well-known/openid-configuration"]
    assert as_metadata_candidates("https://as.example") == [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration"]


def test_resource_matching():
    assert canonical_resource("HTTPS://Example.COM:443/mcp?x=1#f") == "https://example.com/mcp"
    assert resource_covers("http://h:1", "http://h:1/mcp")
    assert resource_covers("http://h:1/mcp", "http://h:1/mcp")
    assert not resource_covers("http://h:1/mc", "http://h:1/mcp")
    assert not resource_covers("https://evil.example.com/mcp", "http://h:1/mcp")
    assert not resource_covers("http://h:2/mcp", "http://h:1/mcp")


def test_challenges():
    challenge = parse('Bearer error="insufficient_scope", scope="a b", '
                      'resource_metadata="http://h/.well-known/x"')
    assert (challenge.error, challenge.scope, challenge.resource_metadata) == (
        "insufficient_scope", "a b", "http://h/.well-known/x")
    assert parse('Basic realm="x", Bearer scope="s"').scope == "s"
    dpop = parse('DPoP error="use_dpop_nonce", algs="ES256", Bearer scope="s"')
    assert (dpop.scheme, dpop.error, dpop.scope) == ("dpop", "use_dpop_nonce", None)
    assert parse('Basic realm="x"').scope is None
    assert parse('Bearer realm="a", Basic scope="theirs"').scope is None
    assert parse("x" * 10000).scope is None


@pytest.mark.parametrize("where", ["oauth", "oidc-inserted", "oidc-appended"])
def test_server_metadata_fallbacks_for_an_issuer_with_a_path(where: str):
    paths = {"oauth": "/.well-known/oauth-authorization-server/tenant1",
             "oidc-inserted": "/.well-known/openid-configuration/tenant1",
             "oidc-appended": "/tenant1/.well-known/openid-configuration"}
    asked: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        asked.append(environ["PATH_INFO"])
        if environ["PATH_INFO"] == paths[where]:
            body = {"issuer": base + "/tenant1", "authorization_endpoint": base + "/a",
                    "token_endpoint": base + "/t", "code_challenge_methods_supported": ["S256"]}
            return _json(body)(environ, start_response)
        return _json({}, 404)(environ, start_response)

    with RunningServer(app) as server:
        base = server.base
        metadata = discover_server(Fetcher(), base + "/tenant1", legacy=False)
    assert metadata.token_endpoint == base + "/t"
    assert asked == list(paths.values())[:list(paths).index(where) + 1]
    assert "/.well-known/oauth-authorization-server" not in asked  # never the root


def test_no_metadata_anywhere_is_a_discovery_error_and_legacy_gets_defaults():
    def app(environ: dict[str, Any], start_response: Any) -> Any:
        return _json({}, 404)(environ, start_response)

    with RunningServer(app) as server:
        with pytest.raises(DiscoveryError):
            discover_server(Fetcher(), server.base, legacy=False)
        info = discover_resource(Fetcher(), server.base + "/mcp", None)
        assert not info.from_metadata and info.authorization_server == server.base
        legacy = discover_server(Fetcher(), info.authorization_server, legacy=True)
    assert legacy.token_endpoint == server.base + "/token"
    assert legacy.authorization_endpoint == server.base + "/authorize"


def test_metadata_past_the_size_bound_is_not_read(auth_server: AuthServer):
    auth_server.metadata_padding = 300 * 1024
    with pytest.raises(DiscoveryError):
        discover_server(Fetcher(max_bytes=256 * 1024), auth_server.issuer, legacy=False)
    auth_server.metadata_padding = 0
    assert discover_server(Fetcher(), auth_server.issuer, legacy=False).issuer == (
        auth_server.issuer)


def test_a_silent_server_times_out():
    """A metadata server that never answers fails discovery within the fetch timeout."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, name="silent-server", daemon=True)
    thread.start()
    try:
        port = listener.getsockname()[1]
        with pytest.raises(DiscoveryError):
            discover_server(Fetcher(timeout=0.5), f"http://127.0.0.1:{port}", legacy=False)
    finally:
        stop.set()
        thread.join(5.0)
        for conn in accepted:
            conn.close()
        listener.close()
