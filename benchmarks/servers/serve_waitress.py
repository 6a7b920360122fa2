"""Serve a WSGI app on waitress: ``python serve_waitress.py PORT [module:app]``
(default ``bench_mcpsync:app``), with the thread and connection counts the other servers get."""

import importlib
import sys

import waitress

module, _, name = (sys.argv[2] if len(sys.argv) > 2 else "bench_mcpsync:app").partition(":")
app = getattr(importlib.import_module(module), name or "app")
waitress.serve(app, host="127.0.0.1", port=int(sys.argv[1]), threads=256,
               connection_limit=2000, backlog=2048, channel_timeout=120,
               asyncore_use_poll=True, _quiet=True)
