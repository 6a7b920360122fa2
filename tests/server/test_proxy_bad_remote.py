"""A proxied remote that misbehaves on the wire: it writes garbage instead of JSON-RPC,
answers with JSON that is not a JSON-RPC response, or never answers ``initialize``. Each
is a real stdio subprocess; the proxy's caller (in memory and over HTTP, both eras) gets
an error that says the proxied server failed, within the proxy's timeout, and never a
hang, a traceback or the remote's command line.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator

import pytest

from mcpsync import Client, Server, StartupError
from mcpsync.errors import MCPSyncError
from tests.helpers import WAIT
from tests.serving import client_over

ERAS = ("2025-11-25", "2026-07-28")
TIMEOUT = 3.0  # the proxy's own bound on its remote

# Each remote reads requests line by line, as a stdio server does, and answers each badly.
REMOTES = {
    "garbage": """
import sys
for line in sys.stdin:
    sys.stdout.write("this is not JSON at all <html>\\n")
    sys.stdout.flush()
""",
    "malformed": """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message:  # a response with neither result nor error, and a wrong version
        sys.stdout.write(json.dumps({"jsonrpc": "1.0", "id": message["id"]}) + "\\n")
        sys.stdout.flush()
""",
    "silent": """
import sys
for line in sys.stdin:
    pass  # reads initialize (or server/discover) and never answers
""",
}


@contextlib.contextmanager
def caller(proxy: Server, kind: str, version: str) -> Iterator[Client]:
    try:
        with client_over(kind, proxy, None, version, timeout=WAIT) as client:
            yield client
    finally:
        proxy.stop()


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("kind", ["memory", "http"])
@pytest.mark.parametrize("remote", list(REMOTES))
def test_a_misbehaving_remote_fails_the_caller_clearly_and_in_bound(remote: str, kind: str,
                                                                    version: str) -> None:
    marker = f"bad-remote-{remote}"
    proxy = Server.proxy([sys.executable, "-c", REMOTES[remote], marker], timeout=TIMEOUT)
    started = time.monotonic()
    with (pytest.raises((MCPSyncError, StartupError)) as failed,
          caller(proxy, kind, version) as client):
        client.call_tool("add", {"a": 1, "b": 2})
    took = time.monotonic() - started
    text = f"{failed.value} {getattr(failed.value, 'data', '')}"
    assert "proxied server" in text, text
    assert marker not in text and "Traceback" not in text, text
    # Bounded by the proxy's timeout (a few of its steps), far from a hang.
    assert took < WAIT / 2, f"took {took:.1f} s"
