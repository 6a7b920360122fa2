"""A proxy of ``tests.server.proxy_remote`` (itself a stdio subprocess of this one), for
the tests that serve the proxy over stdio: ``python -m tests.server.proxy_front``."""

from __future__ import annotations

import os
import sys

from mcpsync import Server

server = Server.proxy([sys.executable, "-m", "tests.server.proxy_remote"], name="front",
                      protocol_version=os.environ.get("PROXY_REMOTE_VERSION", "auto"),
                      timeout=30, server_options={"request_state_key": b"front-test-key"})

if __name__ == "__main__":
    server.run_stdio()
