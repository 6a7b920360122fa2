"""Serve a WSGI app on werkzeug's threaded server: ``python serve_werkzeug.py PORT module:app``.

The raw floor for the werkzeug column (mcpsync itself runs there through ``mcpsync serve``,
which is this server plus its own connection bound and timeouts)."""

import importlib
import sys

from werkzeug.serving import WSGIRequestHandler, make_server

module, _, name = sys.argv[2].partition(":")
app = getattr(importlib.import_module(module), name or "app")
WSGIRequestHandler.protocol_version = "HTTP/1.1"  # keep-alive, as mcpsync serve does
WSGIRequestHandler.log_request = lambda *a, **k: None  # type: ignore[method-assign]
make_server("127.0.0.1", int(sys.argv[1]), app, threaded=True).serve_forever()
