"""A proxy of the weather server (``tests.apps.weather``, its own subprocess over stdio)
whose server uses the apps extension, so it declares MCP Apps to its remote. Run as a
module it serves over stdio (the stdio legs of the proxy tests)."""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpsync import Server
from mcpsync.apps import Apps

ROOT = Path(__file__).resolve().parents[2]
REMOTE = [sys.executable, "-m", "tests.apps.weather"]


def build(**options: object) -> Server:
    """The proxy; ``options`` go to ``Server.proxy`` (its client's options)."""
    proxy = Server.proxy(REMOTE, name="weather-proxy", cwd=str(ROOT), timeout=30, **options)
    proxy.use(Apps())
    return proxy


if __name__ == "__main__":
    build().run_stdio()
