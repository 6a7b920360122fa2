"""gunicorn configuration for the lifespan tests: each worker starts the app eagerly,
as docs/server.md suggests for fail-fast boots."""

from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:
    worker.wsgi.start()
