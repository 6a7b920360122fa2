"""A mcpsync stdio server whose tool only returns once 8 calls run at the same time."""

from __future__ import annotations

import threading

from mcpsync import Server

server = Server("rendezvous")
_barrier = threading.Barrier(8, timeout=20)


@server.tool()
def rendezvous() -> str:
    """Wait until 8 calls are inside this tool at once (a broken barrier means they were not)."""
    _barrier.wait()
    return "met"


if __name__ == "__main__":
    server.run_stdio()
