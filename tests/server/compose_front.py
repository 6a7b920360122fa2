"""One front door to several servers: a Server with a tool of its own that mounts a proxy
of ``tests.server.proxy_remote`` (a stdio subprocess) as ``remote`` and a proxy of the
official Python SDK's server as ``official``. Served over stdio by
``python -m tests.server.compose_front`` (``OFFICIAL_PYTHON``: the SDK venv's python), or
built in process by :func:`build`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcpsync import Server

OFFICIAL_SERVER = Path(__file__).resolve().parents[1] / "interop" / "servers" / (
    "official_server.py")


def build(official_python: str) -> Server:
    door = Server("door", request_state_key=b"door-test-key")

    @door.tool()
    def hello(name: str) -> str:
        """The door's own tool."""
        return f"hello {name}"

    door.mount(Server.proxy([sys.executable, "-m", "tests.server.proxy_remote"],
                            name="remote-proxy", timeout=30,
                            server_options={"request_state_key": b"remote-proxy-key"}),
               prefix="remote")
    door.mount(Server.proxy([official_python, str(OFFICIAL_SERVER)], name="official-proxy",
                            timeout=30,
                            server_options={"request_state_key": b"official-proxy-key"}),
               prefix="official")
    return door


if __name__ == "__main__":
    build(os.environ["OFFICIAL_PYTHON"]).run_stdio()
