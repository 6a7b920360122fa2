"""Fixtures: the example site (examples/oauth_site.py) on a real socket, in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.serving import RunningServer


class Site:
    """The example Flask site at ``base``; ``issuer`` is its AuthorizationServer."""

    def __init__(self, **options: Any) -> None:
        from examples.oauth_site import create_app

        self._app: Any = None
        self.running = RunningServer(lambda environ, start: self._app(environ, start))
        self.base = self.running.base
        self.app = create_app(self.base, **options)
        self._app = self.app.wsgi_app
        self.issuer = self.app.extensions["mcpsync_issuer"]
        self.mcp = self.base + "/mcp"

    def stop(self) -> None:
        self.running.stop()


@pytest.fixture
def make_site() -> Iterator[Callable[..., Site]]:
    started: list[Site] = []

    def make(**options: Any) -> Site:
        site = Site(**options)
        started.append(site)
        return site

    yield make
    for site in started:
        site.stop()


@pytest.fixture
def site(make_site: Callable[..., Site]) -> Site:
    return make_site(allow_loopback_clients=True)
