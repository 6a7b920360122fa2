"""A server with typed tools that reports what it has imported (jsonschema...): run over stdio
(``python coldstart_server.py``) or HTTP (``python coldstart_server.py --http PORT``, werkzeug)
by tests/client/test_import_cost.py."""

from __future__ import annotations

import dataclasses
import sys

from mcpsync import ProtocolOptions, Server
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("coldstart", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@server.tool()
def centre(points: list[Point], label: int | str | None = None) -> Point:
    """The mean of the points."""
    return Point(sum(p.x for p in points) / len(points), sum(p.y for p in points) / len(points))


@server.tool()
def jsonschema_loaded() -> bool:
    """Whether this process has imported jsonschema."""
    return "jsonschema" in sys.modules


@server.tool()
def loaded(names: list[str]) -> list[str]:
    """Which of ``names`` this process has imported."""
    return [name for name in names if name in sys.modules]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        from werkzeug.serving import make_server

        make_server("127.0.0.1", int(sys.argv[2]), server.wsgi_app(path="/mcp"),
                    threaded=True).serve_forever()
    else:
        server.run_stdio()
