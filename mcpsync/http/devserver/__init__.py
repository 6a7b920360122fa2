"""The development server behind :func:`mcpsync.http.serve` and ``mcpsync serve``.

One reader thread (:mod:`~mcpsync.http.devserver.reader`) reads whole requests, a bounded pool
(:mod:`~mcpsync.http.devserver.pool`) runs the application on them
(:mod:`~mcpsync.http.devserver.handler`), and :mod:`~mcpsync.http.devserver.server` ties them
together.
"""

from .server import DevServer

__all__ = ["DevServer"]
