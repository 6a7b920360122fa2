"""Locate the real interop peers installed by ``scripts/install-peers``.

Every locator returns an absolute path as a string, or raises :class:`PeerMissing` when the
file is not there.  Tests should go through :func:`require` (or the fixtures in
``conftest.py``), which turns a missing peer into ``pytest.skip`` -- or into ``pytest.fail``
when ``MCPSYNC_REQUIRE_PEERS=1`` (CI, where a silent skip would hide a broken install).

The install root is ``$MCPSYNC_PEERS_DIR``, default ``~/.cache/mcpsync-peers``, the same
rule the install script uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

PEERS_DIR_ENV = "MCPSYNC_PEERS_DIR"
REQUIRE_ENV = "MCPSYNC_REQUIRE_PEERS"
INSTALL_HINT = "run scripts/install-peers"

_NPM_SCOPE = ("npm", "node_modules", "@modelcontextprotocol")


class PeerMissing(FileNotFoundError):
    """A peer is not installed where it should be."""


def peers_dir() -> Path:
    """The install root: ``$MCPSYNC_PEERS_DIR`` or ``~/.cache/mcpsync-peers``."""
    configured = os.environ.get(PEERS_DIR_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "mcpsync-peers"


def _existing(path: Path, what: str) -> str:
    if not path.is_file():
        raise PeerMissing(f"{what} not found at {path} ({INSTALL_HINT})")
    return str(path)


def node22() -> str:
    """Path of the Node 22 binary (npm package ``node@22.23.3``)."""
    return _existing(peers_dir() / "node22" / "node_modules" / "node" / "bin" / "node", "Node 22")


def node22_bin_dir() -> str:
    """Directory of the Node 22 binary, to put first on ``PATH`` for the Node peers."""
    return str(Path(node22()).parent)


def everything_js() -> str:
    """Entry script of ``@modelcontextprotocol/server-everything``; run as ``node it stdio``."""
    path = peers_dir().joinpath(*_NPM_SCOPE, "server-everything", "dist", "index.js")
    return _existing(path, "server-everything")


def inspector_js() -> str:
    """Launcher script of ``@modelcontextprotocol/inspector``; run as ``node it --cli ...``."""
    launcher = ("inspector", "clients", "launcher", "build", "index.js")
    path = peers_dir().joinpath(*_NPM_SCOPE, *launcher)
    return _existing(path, "MCP Inspector")


def conformance_js() -> str:
    """Entry script of ``@modelcontextprotocol/conformance`` (needs Node 22)."""
    path = peers_dir().joinpath(*_NPM_SCOPE, "conformance", "dist", "index.js")
    return _existing(path, "conformance suite")


def official_python() -> str:
    """Python of the venv holding the official SDK (``mcp==2.3.0``)."""
    return _existing(peers_dir() / "py-mcp" / "bin" / "python", "official SDK venv")


def official_client_script() -> str:
    """Path of ``official_client.py``, the driver to run with :func:`official_python`."""
    return str(Path(__file__).with_name("official_client.py"))


def node_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) with Node 22 first on ``PATH``."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = node22_bin_dir() + os.pathsep + env.get("PATH", "")
    return env


def require(path_getter: Callable[[], str]) -> str:
    """Return ``path_getter()``; if the peer is missing, skip the test (or fail it).

    Fails instead of skipping when ``MCPSYNC_REQUIRE_PEERS=1``.
    """
    try:
        return path_getter()
    except PeerMissing as e:
        message = f"interop peer missing: {e}"
    # Outside the except block, so the report does not chain the PeerMissing traceback.
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message}; {REQUIRE_ENV}=1 forbids skipping", pytrace=False)
    pytest.skip(message)


def run_official_client(
    args: Sequence[str],
    server_cmd: Sequence[str] | None = None,
    *,
    url: str | None = None,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> dict[str, Any]:
    """Run ``official_client.py ARGS -- SERVER_CMD`` (or, with ``url``, ``official_client.py
    --url URL ARGS`` over Streamable HTTP) under the official SDK and return its report.

    ``args`` are the driver's options and scenario, e.g. ``["call", "echo", '{"message": "hi"}']``.
    With ``check`` (default) a report without ``"ok": true`` fails the test, showing stderr.
    """
    if (server_cmd is None) == (url is None):
        raise TypeError("run_official_client needs exactly one of server_cmd and url")
    target = ["--url", url] if url is not None else ["--", *(server_cmd or ())]
    cmd = [require(official_python), official_client_script(), *args]
    cmd = [*cmd, *target] if url is None else [*cmd[:2], *target, *cmd[2:]]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ if env is None else env),
        check=False,
    )
    try:
        report: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"official_client.py printed no JSON (exit {proc.returncode})\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}",
            pytrace=False,
        )
    if check and not report.get("ok"):
        sys.stderr.write(proc.stderr)
        pytest.fail(f"official_client.py failed: {report.get('error')}", pytrace=False)
    return report
