"""Serve bench_mcpsync.app on waitress: ``python serve_waitress.py PORT``."""

import sys

import waitress
from bench_mcpsync import app

waitress.serve(app, host="127.0.0.1", port=int(sys.argv[1]), threads=256,
               connection_limit=2000, backlog=2048, channel_timeout=120,
               asyncore_use_poll=True, _quiet=True)
