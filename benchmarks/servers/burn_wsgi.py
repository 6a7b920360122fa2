"""The raw WSGI floor plus a fixed amount of Python work per request (``BURN_US`` µs of
this thread's CPU time, spun in a loop), for ``granian_compare.py --burn``.

What it answers: how much server CPU per request a WSGI app that spends N µs of Python
per request costs under one granian process at 64 in flight, next to the floor (N = 0) in
the same round. Python work holds the GIL, so the threads granian runs the app on queue for
it, and a request costs more than its own N µs; the curve says what in-process cost a
target ratio to the floor leaves an app (docs/benchmarks.md, "The HTTP hot path").
"""

import os
import time

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":false}}'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]
BURN = float(os.environ.get("BURN_US", "0")) / 1e6


def app(environ, start_response):
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    end = time.thread_time() + BURN
    while time.thread_time() < end:
        pass
    start_response("200 OK", HEADERS)
    return [BODY]
