"""The HTTP fixtures (``serve``: apps on real sockets) for the Redis tests too."""

from __future__ import annotations

from tests.http.conftest import serve

__all__ = ["serve"]
