"""pytest fixtures for testing an mcpsync server: ``mcp_client`` in both protocol eras.

Installed with mcpsync as a pytest plugin (the ``pytest11`` entry point), so the fixtures
need no import. Tell it which server to test, then ask for ``mcp_client``::

    import pytest
    from myapp import server

    @pytest.fixture
    def mcp_server():
        return server

    def test_add(mcp_client):
        assert mcp_client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}

Each test that uses ``mcp_client`` runs twice, once per era of :data:`mcpsync.testing.ERAS`
(ids ``2026-07-28`` and ``2025-11-25``), with a client connected in memory and closed after
the test. ``mcp_protocol_version`` is the era of the current run. Without the entry point
(e.g. mcpsync not installed), ``pytest_plugins = ["mcpsync.pytest_plugin"]`` in a
``conftest.py`` loads the same fixtures.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .testing import ERAS, connect

if TYPE_CHECKING:
    from .client import Client
    from .facade import Server


@pytest.fixture
def mcp_server() -> Server:
    """The server under test: override this fixture to return yours."""
    raise pytest.UsageError(
        "the mcp_client fixture needs an mcp_server fixture that returns your "
        "mcpsync.Server (define it in your test module or conftest.py)")


@pytest.fixture(params=ERAS)
def mcp_protocol_version(request: pytest.FixtureRequest) -> str:
    """The protocol era of this run of the test (each of ``ERAS`` in turn)."""
    version: str = request.param
    return version


@pytest.fixture
def mcp_client(mcp_server: Server, mcp_protocol_version: str) -> Iterator[Client]:
    """A client of ``mcp_server`` in this process, in ``mcp_protocol_version``."""
    options: dict[str, Any] = {"timeout": 30.0}
    with connect(mcp_server, mcp_protocol_version, **options) as client:
        yield client
