"""The HTTP client's POST skips ``requests``' per-call machinery on its own session
(mcpsync/transports/http/post.py). What that machinery does must still happen whenever it
applies: a cookie the server sets is sent back, a redirect is followed, TLS is verified
with the configured CA bundle, failures are the same errors. Each test runs with the
transport's own session (the direct POST) and with a caller's ``requests.Session`` (the
``requests`` path), which must behave alike."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from mcpsync import Client, ClientMiddleware, TransportError
from tests.helpers import WAIT
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer

VERSIONS = ["2026-07-28", "2025-11-25"]

App = Callable[[dict[str, Any], Callable[..., Any]], Any]


@pytest.fixture(params=["own", "caller's"])
def session(request: pytest.FixtureRequest) -> Iterator[requests.Session | None]:
    """None: the transport's own session (direct POST); else a caller's session."""
    if request.param == "own":
        yield None
        return
    given = requests.Session()
    yield given
    given.close()


@pytest.fixture
def serve_app() -> Iterator[Callable[..., str]]:
    """``serve_app(app, ssl_context=None)`` -> its base URL; stopped and joined at teardown."""
    running: list[RunningServer] = []

    def start(app: App, ssl_context: Any = None) -> str:
        httpd = RunningServer(app, ssl_context=ssl_context)
        running.append(httpd)
        return httpd.base

    yield start
    for httpd in reversed(running):
        httpd.stop()


@pytest.fixture
def mcp_app() -> Iterator[App]:
    app = fixture_server.wsgi_app(path="/mcp")
    yield app
    app.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_cookie_the_server_sets_is_sent_back(serve_app, mcp_app, session, version):
    # A load balancer's affinity cookie, set on the first answer: every later POST of
    # the client carries it, as requests' session would send it.
    cookies: list[str | None] = []
    lock = threading.Lock()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ["REQUEST_METHOD"] == "POST":
            with lock:
                cookies.append(environ.get("HTTP_COOKIE"))

        def start(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            if environ["REQUEST_METHOD"] == "POST":
                headers = [*headers, ("Set-Cookie", "affinity=node-7; Path=/")]
            return start_response(status, headers, *rest)

        return mcp_app(environ, start)

    base = serve_app(app)
    with Client.http(base + "/mcp", protocol_version=version, timeout=WAIT,
                     session=session) as client:
        for _ in range(3):
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    with lock:
        seen = list(cookies)
    assert seen[0] is None
    assert len(seen) >= 4
    assert all(cookie == "affinity=node-7" for cookie in seen[1:]), seen


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("status", ["307 Temporary Redirect", "308 Permanent Redirect"])
def test_a_redirect_of_the_post_is_followed(serve_app, mcp_app, session, version, status):
    # An endpoint that moved: requests follows 307/308 with the same method and body.
    # The redirect has a body of its own, which must not be left on a reused connection.
    page = b"<html>moved</html>" * 200

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ["PATH_INFO"] == "/old":
            start_response(status, [("Location", "/mcp"), ("Content-Type", "text/html"),
                                    ("Content-Length", str(len(page)))])
            return [page]
        return mcp_app(environ, start_response)

    base = serve_app(app)
    with Client.http(base + "/old", protocol_version=version, timeout=WAIT,
                     session=session) as client:
        assert client.call_tool("echo", {"text": "moved"}).text == "moved"
        assert client.call_tool("echo", {"text": "again"}).text == "again"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 (cert path, key path), made by openssl."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"openssl cannot make a test certificate: {exc}")
    return cert, key


@pytest.fixture
def https_base(serve_app, mcp_app, certificate, monkeypatch):
    """The app served over HTTPS with the self-signed certificate (base URL, cert path), and
    no CA bundle in the environment (requests lets one override a session's ``verify``)."""
    cert, key = certificate
    base = serve_app(mcp_app, ssl_context=(cert, key))
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    return base, cert


def test_https_is_verified_against_the_ca_bundle(https_base, monkeypatch):
    base, cert = https_base
    # Not trusted: the certificate is refused, as requests refuses it.
    with pytest.raises(TransportError, match=r"(?i)certificate"):
        Client.http(base + "/mcp", protocol_version="2026-07-28", timeout=WAIT)
    # Trusted through the CA bundle the transport's own session reads from the environment.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", cert)
    for version in VERSIONS:
        with Client.http(base + "/mcp", protocol_version=version, timeout=WAIT) as client:
            assert client.call_tool("echo", {"text": "tls"}).text == "tls"


def test_https_with_a_callers_session_and_its_verify(https_base):
    base, cert = https_base
    given = requests.Session()
    given.verify = cert
    try:
        with Client.http(base + "/mcp", session=given, timeout=WAIT) as client:
            assert client.call_tool("echo", {"text": "tls"}).text == "tls"
    finally:
        given.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_the_own_session_posts_without_session_request(serve_app, mcp_app, version,
                                                       monkeypatch):
    # The point of the direct POST: a plain call does not go through Session.request
    # (the GET stream and DELETE still do). A spy that calls the real method.
    posts: list[str] = []
    real = requests.Session.request

    def counting(self: requests.Session, method: str, url: str, *args: Any,
                 **kwargs: Any) -> Any:
        if method.upper() == "POST":
            posts.append(url)
        return real(self, method, url, *args, **kwargs)

    monkeypatch.setattr(requests.Session, "request", counting)
    base = serve_app(mcp_app)
    with Client.http(base + "/mcp", protocol_version=version, timeout=WAIT) as client:
        for _ in range(5):
            assert client.call_tool("echo", {"text": "x"}).text == "x"
    assert posts == []


@pytest.mark.parametrize("version", VERSIONS)
def test_an_answer_is_routed_on_the_thread_that_read_it(serve_app, mcp_app, session,
                                                        version):
    # The answer goes to the connection on the HTTP worker that read it, not through a
    # queue to the reader thread: one thread woken per call, not two.
    threads: list[str] = []

    def tap(message: Any, forward: Callable[[Any], None]) -> None:
        threads.append(threading.current_thread().name)
        forward(message)

    base = serve_app(mcp_app)
    with Client.http(base + "/mcp", protocol_version=version, timeout=WAIT, session=session,
                     middleware=ClientMiddleware(recv=[tap])) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
    assert threads and all(name.startswith("mcpsync-http-client") for name in threads), threads
