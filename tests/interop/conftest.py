"""Fixtures exposing the interop peers; each skips (or fails) when its peer is missing."""

from __future__ import annotations

import pytest

from . import peers


@pytest.fixture(scope="session")
def node22() -> str:
    """Path of the Node 22 binary."""
    return peers.require(peers.node22)


@pytest.fixture(scope="session")
def everything_js() -> str:
    """server-everything entry script (``[node, everything_js, "stdio"]``)."""
    return peers.require(peers.everything_js)


@pytest.fixture(scope="session")
def everything_stdio_cmd(node22: str, everything_js: str) -> list[str]:
    """Command line that starts server-everything on stdio."""
    return [node22, everything_js, "stdio"]


@pytest.fixture(scope="session")
def inspector_js() -> str:
    """MCP Inspector launcher script (run with Node 22: ``--cli ...``)."""
    return peers.require(peers.inspector_js)


@pytest.fixture(scope="session")
def conformance_js() -> str:
    """Conformance suite entry script (run with Node 22)."""
    return peers.require(peers.conformance_js)


@pytest.fixture(scope="session")
def official_python() -> str:
    """Python of the official SDK's venv (runs ``official_client.py``)."""
    return peers.require(peers.official_python)


@pytest.fixture(scope="session")
def official_client(official_python: str) -> list[str]:
    """``[venv python, official_client.py]``: prefix of a driver command line."""
    return [official_python, peers.official_client_script()]
