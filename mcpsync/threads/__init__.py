"""Thread machinery that knows nothing of MCP: :class:`~mcpsync.threads.pool.WorkerPool`
(bounded, named, reusable handler threads) and :data:`~mcpsync.threads.watchdog.WATCHDOG`
(the one thread that ends waits at their deadlines).

Kept below both ``transports/`` and ``engine/``, since both use them: the HTTP client
POSTs on a ``WorkerPool`` and ends its exchanges with the watchdog, and a connection runs
its handlers on a ``WorkerPool``. Neither module imports anything of mcpsync."""
