"""Streamable HTTP, client side, on ``requests``.

:class:`~mcpsync.transports.http.transport.HttpTransport` is what the engine sees; the other
modules are its parts: the call table, session state, SSE streams, direct POSTs, deadlines
and bounded reads.
"""
