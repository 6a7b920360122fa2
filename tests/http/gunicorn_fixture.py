"""The fixture server at /mcp as a WSGI app, for tests that run it under real gunicorn
(``gunicorn tests.http.gunicorn_fixture:app``)."""

from __future__ import annotations

from tests.server.fixture_server import server

app = server.wsgi_app(path="/mcp", max_body_bytes=64 * 1024)
