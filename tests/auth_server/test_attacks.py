"""Attacks on the authorization server, each its own test, against the example site."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from mcpsync.auth.issuer.documents import DocumentError, DocumentPolicy, fetch_metadata_document
from tests.helpers import slack
from tests.serving import RunningServer

from .conftest import Site
from .driver import Browser, forms
from .oauth_steps import (
    REDIRECT_URI,
    Pkce,
    authorize_url,
    callback,
    exchange,
    get_code,
    refresh,
    register,
    tokens,
    whoami_status,
)


def test_redirect_uri_not_registered_is_never_redirected_to(site: Site) -> None:
    client_id = register(site)
    browser = Browser()
    for evil in ("https://evil.example/callback", REDIRECT_URI + "/x", REDIRECT_URI + "?a=1",
                 "http://127.0.0.1:9/other", "http://localhost:9/callback"):
        answer = browser.get(authorize_url(site, client_id, Pkce.new(), redirect_uri=evil))
        assert answer.status_code == 400, evil
        assert "Location" not in answer.headers
        assert "cannot be authorized" in answer.text
    # Registration refuses such URIs in the first place.
    for bad, kind in ((["javascript:alert(1)"], "native"), (["http://example.com/cb"], "native"),
                      (["https://a/cb#frag"], "web"), ([REDIRECT_URI], "web"),
                      (["com.example.app:/cb"], "web")):
        refused = requests.post(site.base + "/register", timeout=10,
                                json={"client_name": "x", "redirect_uris": bad,
                                      "application_type": kind})
        assert refused.status_code == 400, bad
        assert refused.json()["error"] == "invalid_redirect_uri", (bad, kind)
    # A native application may use a loopback or private-use redirect URI.
    assert register(site, redirect_uris=["com.example.app:/cb", REDIRECT_URI])


def test_code_replayed_is_refused_and_revokes_what_it_gave(site: Site) -> None:
    client_id = register(site)
    pkce = Pkce.new()
    code = get_code(site, client_id, pkce)
    first = exchange(site, client_id, code, pkce.verifier)
    assert first.status_code == 200
    assert whoami_status(site, first.json()["access_token"]) == 200
    second = exchange(site, client_id, code, pkce.verifier)
    assert second.status_code == 400 and second.json()["error"] == "invalid_grant"
    # The replay revoked the grant: the first exchange's tokens no longer work.
    assert whoami_status(site, first.json()["access_token"]) == 401
    assert refresh(site, client_id, first.json()["refresh_token"]).status_code == 400


def test_code_exchanged_concurrently_is_issued_once(site: Site) -> None:
    client_id = register(site)
    pkce = Pkce.new()
    code = get_code(site, client_id, pkce)
    results: list[int] = []
    lock = threading.Lock()

    def attempt() -> None:
        status = exchange(site, client_id, code, pkce.verifier).status_code
        with lock:
            results.append(status)

    threads = [threading.Thread(target=attempt, name=f"replay-{i}") for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == [200] + [400] * 5


def test_pkce_verifier_wrong_or_missing(site: Site) -> None:
    client_id = register(site)
    pkce = Pkce.new()
    wrong = exchange(site, client_id, get_code(site, client_id, pkce), Pkce.new().verifier)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    missing = exchange(site, client_id, get_code(site, client_id, pkce), None)
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"


def test_authorization_without_s256_challenge_is_refused(site: Site) -> None:
    client_id = register(site)
    browser = Browser()
    browser.sign_in(site.base)
    no_pkce = browser.get(authorize_url(site, client_id, None))
    plain = browser.get(authorize_url(site, client_id, None, code_challenge="x" * 43,
                                      code_challenge_method="plain"))
    for answer in (no_pkce, plain):
        assert answer.status_code == 302
        back = callback(answer.headers["Location"])
        assert back["error"] == "invalid_request" and "code" not in back
        assert back["iss"] == site.base and back["state"] == "st-1"


def test_refresh_token_reused_after_rotation_revokes_the_family(site: Site) -> None:
    client_id, issued = tokens(site)
    rotated = refresh(site, client_id, issued["refresh_token"])
    assert rotated.status_code == 200
    new = rotated.json()
    assert new["refresh_token"] != issued["refresh_token"]
    reused = refresh(site, client_id, issued["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    # Whoever held the family (the thief or the client) lost it: the new tokens too.
    assert refresh(site, client_id, new["refresh_token"]).status_code == 400
    assert whoami_status(site, new["access_token"]) == 401
    assert site.issuer.store.grants_of("alice") == []


def test_refresh_token_of_another_client_is_refused(site: Site) -> None:
    _, issued = tokens(site)
    other = register(site)
    assert refresh(site, other, issued["refresh_token"]).status_code == 400


def test_token_for_another_resource(site: Site) -> None:
    client_id = register(site)
    browser = Browser()
    browser.sign_in(site.base)
    # Authorization for a resource this server does not serve: invalid_target, no code.
    answer = browser.get(authorize_url(site, client_id, Pkce.new(),
                                       resource="https://other.example/mcp"))
    back = callback(answer.headers["Location"])
    assert back["error"] == "invalid_target" and "code" not in back
    # A code for /mcp exchanged naming another resource: refused.
    pkce = Pkce.new()
    code = get_code(site, client_id, pkce)
    wrong = exchange(site, client_id, code, pkce.verifier,
                     resource="https://other.example/mcp")
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_target"
    # A token for this /mcp is refused by another resource server trusting this issuer.
    _, issued = tokens(site)
    from mcpsync import JwtVerifier, ResourceServer

    for resource, accepted in ((site.mcp, True), (site.base + "/other-mcp", False)):
        verifier = JwtVerifier(site.base + "/jwks.json", issuer=site.base, audience=resource)
        guard = ResourceServer(verifier, resource=resource,
                               authorization_servers=[site.base])
        verified = guard.authenticate(f"Bearer {issued['access_token']}")
        assert (getattr(verified, "subject", None) == "alice") is accepted, verified


def test_consent_post_without_its_csrf_token(site: Site) -> None:
    client_id = register(site)
    alice = Browser("alice")
    alice.sign_in(site.base)
    url = authorize_url(site, client_id, Pkce.new())
    page = alice.get(url)
    assert page.status_code == 200
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    action, fields = forms(page.text)[0]
    target = site.base + "/authorize"
    assert action == target
    without = {k: v for k, v in fields.items() if k != "csrf_token"}
    refused = alice.session.post(target, data={**without, "decision": "allow"},
                                 allow_redirects=False, timeout=10)
    assert refused.status_code == 403 and "Location" not in refused.headers
    # Bob's token (a valid one, for the same request) does not work for Alice either.
    bob = Browser("bob")
    bob.sign_in(site.base)
    bobs = forms(bob.get(url).text)[0][1]["csrf_token"]
    swapped = alice.session.post(target, data={**without, "csrf_token": bobs,
                                               "decision": "allow"},
                                 allow_redirects=False, timeout=10)
    assert swapped.status_code == 403
    # Nor does Alice's token for a changed request (another redirect, scope, state...).
    changed = alice.session.post(target, data={**fields, "state": "other",
                                               "decision": "allow"},
                                 allow_redirects=False, timeout=10)
    assert changed.status_code == 403
    # Her own, unchanged, does.
    allowed = alice.session.post(target, data={**fields, "decision": "allow"},
                                 allow_redirects=False, timeout=10)
    assert allowed.status_code == 302 and "code=" in allowed.headers["Location"]


def test_client_name_with_html_is_escaped_on_the_consent_page(site: Site) -> None:
    name = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    client_id = register(site, client_name=name, client_uri="javascript:alert(3)")
    browser = Browser()
    browser.sign_in(site.base)
    page = browser.get(authorize_url(site, client_id, Pkce.new(), state='"><b>x</b>'))
    assert page.status_code == 200
    assert "<script>" not in page.text and "<img" not in page.text
    assert "<b>x</b>" not in page.text and "javascript:" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


# -- client metadata documents ----------------------------------------------------------

@pytest.fixture
def document_host() -> Iterator[tuple[RunningServer, list[str], dict[str, Any]]]:
    """A host for metadata documents: ``behaviour["body"]`` is an iterable of chunks
    (default: the document), ``hits`` the paths requested."""
    hits: list[str] = []
    behaviour: dict[str, Any] = {}

    def app(environ: dict[str, Any], start: Callable[..., Any]) -> Any:
        hits.append(environ["PATH_INFO"])
        start("200 OK", [("Content-Type", "application/json"),
                         *behaviour.get("headers", [])])
        return behaviour.get("body") or [json.dumps(behaviour["document"]).encode()]

    with RunningServer(app) as host:
        yield host, hits, behaviour


def test_metadata_document_on_a_private_address_is_never_fetched(
        make_site: Callable[..., Site],
        document_host: tuple[RunningServer, list[str], dict[str, Any]]) -> None:
    host, hits, behaviour = document_host
    site = make_site()  # production settings: no private addresses
    for url in (f"https://127.0.0.1:{host.port}/client.json",
                f"https://localhost:{host.port}/client.json",
                f"http://127.0.0.1:{host.port}/client.json"):
        behaviour["document"] = {"client_id": url, "client_name": "x",
                                 "redirect_uris": [REDIRECT_URI]}
        answer = Browser().get(authorize_url(site, url, Pkce.new()))
        assert answer.status_code == 400 and "Location" not in answer.headers
    assert hits == []
    policy = DocumentPolicy(allow_http=True)
    for address in ("10.1.2.3", "169.254.169.254", "[::1]", "[::ffff:127.0.0.1]",
                    "192.168.0.1", "100.64.0.1", "0.0.0.0", "[fe80::1]"):
        with pytest.raises(DocumentError, match="not a public address"):
            fetch_metadata_document(f"http://{address}/client.json", policy)


def test_metadata_document_of_50_mib_is_cut_off(
        document_host: tuple[RunningServer, list[str], dict[str, Any]]) -> None:
    host, _, behaviour = document_host
    sent = [0]

    def huge() -> Iterator[bytes]:
        chunk = b" " * 65536
        while sent[0] < 50 * 1024 * 1024:
            sent[0] += len(chunk)
            yield chunk

    behaviour["body"] = huge()
    policy = DocumentPolicy(allow_http=True, allow_private_addresses=True)
    started = time.monotonic()
    with pytest.raises(DocumentError, match="too large"):
        fetch_metadata_document(host.base + "/client.json", policy)
    assert time.monotonic() - started < slack(5)
    assert sent[0] < 10 * 1024 * 1024  # the reading stopped long before the end
    # Declared too large: refused before the body is read.
    behaviour["body"] = [b"{}"]
    behaviour["headers"] = [("Content-Length", str(50 * 1024 * 1024))]
    with pytest.raises(DocumentError):
        fetch_metadata_document(host.base + "/client.json", policy)


def test_metadata_document_trickled_is_cut_off_by_the_deadline(
        document_host: tuple[RunningServer, list[str], dict[str, Any]]) -> None:
    host, _, behaviour = document_host
    stop = threading.Event()

    def trickle() -> Iterator[bytes]:
        while not stop.wait(0.05):  # a byte every 50 ms: never done, never too large
            yield b" "

    behaviour["body"] = trickle()
    policy = DocumentPolicy(timeout=1.0, allow_http=True, allow_private_addresses=True)
    started = time.monotonic()
    try:
        with pytest.raises(DocumentError, match=r"too long|could not be fetched"):
            fetch_metadata_document(host.base + "/client.json", policy)
    finally:
        stop.set()
    assert time.monotonic() - started < 1.0 + slack(2)


def test_metadata_document_must_name_itself(
        site: Site, document_host: tuple[RunningServer, list[str], dict[str, Any]]) -> None:
    host, hits, behaviour = document_host
    url = host.base + "/client.json"
    behaviour["document"] = {"client_id": host.base + "/other.json", "client_name": "x",
                             "redirect_uris": [REDIRECT_URI]}
    answer = Browser().get(authorize_url(site, url, Pkce.new()))
    assert answer.status_code == 400 and hits == ["/client.json"]


def test_a_name_lookup_that_never_answers_is_cut_off_by_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # getaddrinfo takes no timeout; a DNS server that never answers is played by a lookup
    # that blocks until the test ends.
    import socket

    release = threading.Event()

    def silent(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        raise OSError("no answer")

    monkeypatch.setattr(socket, "getaddrinfo", silent)
    policy = DocumentPolicy(timeout=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(DocumentError, match="took too long"):
            fetch_metadata_document("https://slow-dns.example/client.json", policy)
    finally:
        release.set()
    assert time.monotonic() - started < 0.5 + slack(2)
