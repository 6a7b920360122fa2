"""The server the guard tests drive on every transport: ``build()`` in this process
(memory, HTTP), ``python -m tests.middleware.guarded_server`` as a real stdio subprocess.

Who calls is said by the test itself: an ``X-User`` header over HTTP, or ``_meta
["tests/user"]`` on any transport, which a receive middleware turns into ``ctx.auth`` (as
an auth layer would). Guards, in order (the audit log outermost):

- ``AuditLog`` on the logger ``tests.audit`` (and, in a subprocess, the JSON lines file
  ``MCPSYNC_TEST_AUDIT``);
- ``RateLimit("3/minute")`` per principal on the tool ``limited``;
- ``RateLimit("2/second")`` on the read-only ``quick_read`` and on ``guarded://limited``;
- ``ConcurrencyLimit(1)`` per principal on ``hold`` (which waits for ``release``);
- ``ResponseLimit(300)`` on ``big``, and with ``truncate=True`` on ``big_cut``;
- ``ResponseCache(60)`` (per principal): ``stamp`` is read-only, ``bump`` is not, the
  resource ``guarded://stamp`` is read.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from mcpsync import HandlerContext, Server, ToolAnnotations, current_transport
from mcpsync.middleware import AuditLog, ConcurrencyLimit, RateLimit, ResponseCache, ResponseLimit
from mcpsync.protocol.jsonrpc import Message, Request

AUDIT = "tests.audit"
HOLD_LIMIT = 30.0  # seconds ``hold`` waits for ``release`` at most


def who(message: Message, next_: Callable[[Message], None]) -> None:
    """The test's stand-in for an auth layer: the caller it names becomes ``ctx.auth``."""
    transport = current_transport()
    if transport is not None and isinstance(message, Request):
        meta = (message.params or {}).get("_meta")
        user = meta.get("tests/user") if isinstance(meta, dict) else None
        user = user or transport.headers.get("X-User")
        if user:
            transport.auth = {"sub": user}
    next_(message)


def build(*, storage: str = "memory://", audit: logging.Logger | str = AUDIT) -> Server:
    server = Server("guarded")
    server.recv_middleware.append(who)
    calls = {"limited": 0, "stamp": 0, "bump": 0, "read": 0}
    released = threading.Event()
    lock = threading.Lock()

    def count(name: str) -> int:
        with lock:
            calls[name] += 1
            return calls[name]

    server.add_middleware(AuditLog(audit))
    server.add_middleware(RateLimit("3/minute", tools=["limited"], storage=storage,
                                    name=f"tests-rate-{os.urandom(4).hex()}"))
    server.add_middleware(RateLimit("2/second", tools=["quick_read", "guarded://limited"],
                                    storage=storage, name=f"tests-quick-{os.urandom(4).hex()}"))
    server.add_middleware(ConcurrencyLimit(1, tools=["hold"], storage=storage,
                                           name=f"tests-conc-{os.urandom(4).hex()}"))
    server.add_middleware(ResponseLimit(300, tools=["big"]))
    server.add_middleware(ResponseLimit(300, tools=["big_cut"], truncate=True))
    server.add_middleware(ResponseCache(60, storage=storage,
                                        name=f"tests-cache-{os.urandom(4).hex()}"))

    @server.tool()
    def limited() -> int:
        """How many times this tool ran."""
        return count("limited")

    @server.tool()
    def calls_seen() -> dict[str, int]:
        """What ran, by tool (not read-only: never cached)."""
        with lock:
            return dict(calls)

    @server.tool()
    def hold(ctx: HandlerContext) -> str:
        """Hold a slot until ``release`` is called (bounded)."""
        ctx.progress(0, 1, "holding")
        released.wait(HOLD_LIMIT)
        return "held"

    @server.tool()
    def release() -> str:
        released.set()
        return "released"

    @server.tool()
    def big(size: int = 1000) -> str:
        return "x" * size

    @server.tool()
    def big_cut(size: int = 1000) -> str:
        return "y" * size

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def stamp(ctx: HandlerContext, tag: str = "") -> str:
        """Read-only: the cache may answer it."""
        return f"{tag}:{count('stamp')}:{(ctx.auth or {}).get('sub')}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def quick_read(n: int) -> int:
        """Read-only, 2 per second (a client's retry waits the refusal out)."""
        return n

    @server.resource("guarded://limited")
    def read_limited() -> str:
        return "limited read"

    @server.tool()
    def bump() -> int:
        """Not read-only: never cached."""
        return count("bump")

    @server.tool()
    def secret(api_key: str) -> str:
        """Takes a secret argument (the audit log must not show it)."""
        return "ok" if api_key else "no"

    @server.resource("guarded://stamp")
    def read_stamp() -> str:
        return f"read {count('read')}"

    return server


server = build()

if __name__ == "__main__":
    path = os.environ.get("MCPSYNC_TEST_AUDIT")
    if path:
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logging.getLogger(AUDIT).addHandler(handler)
        logging.getLogger(AUDIT).setLevel(logging.INFO)
    server.run_stdio()
