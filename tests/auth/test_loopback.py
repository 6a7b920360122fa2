"""``LoopbackRedirect``: the redirect comes back to a listener on 127.0.0.1 (a browser
played by a ``requests`` thread that follows the authorization server's redirect)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import requests

from mcpsync import AuthorizationResponseError, Client, LoopbackRedirect, OAuth

from .authserver import AuthServer


class Browser:
    """Opens URLs on its own named threads, following redirects as a browser would."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.pages: list[str] = []

    def open(self, url: str) -> None:
        def visit() -> None:
            self.pages.append(requests.get(url, timeout=10.0).text)

        thread = threading.Thread(target=visit, name=f"test-browser-{len(self.threads)}")
        self.threads.append(thread)
        thread.start()

    def close(self) -> None:
        for thread in self.threads:
            thread.join(15.0)
            assert not thread.is_alive()


def test_the_redirect_comes_back_to_the_listener(auth_server: AuthServer, protect: Any):
    mcp = protect()
    browser = Browser()
    try:
        with LoopbackRedirect(opener=browser.open) as loopback:
            assert loopback.redirect_uri.startswith("http://127.0.0.1:")
            oauth = OAuth(redirect_uri=loopback.redirect_uri, redirect_handler=loopback)
            with Client.http(mcp.url, auth=oauth, protocol_version="2026-07-28") as client:
                assert client.list_tools()
    finally:
        browser.close()
    assert "close this window" in browser.pages[0]
    [authorize] = auth_server.requests_to("/authorize")
    assert authorize.params["redirect_uri"] == loopback.redirect_uri


def test_other_paths_are_not_the_callback_and_the_wait_is_bounded():
    with LoopbackRedirect(timeout=1.0, opener=lambda url: None) as loopback:
        stray: list[int] = []

        def knock() -> None:
            stray.append(requests.get(f"http://127.0.0.1:{loopback.port}/favicon.ico",
                                      timeout=10.0).status_code)

        thread = threading.Thread(target=knock, name="test-stray-request")
        thread.start()
        with pytest.raises(AuthorizationResponseError, match="within"):
            loopback("https://as.example/authorize")
        thread.join(10.0)
    assert stray == [404]
