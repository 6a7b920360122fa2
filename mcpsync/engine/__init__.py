"""The engine of a connection: its reader loop, the table of pending calls, inbound
requests on a bounded handler pool (:mod:`mcpsync.threads.pool`) or inline. Other
packages start threads of their own for what only they know about (the HTTP client's
streams, the dev server's reader, Redis listeners, task runners, the stdio bridge); every
thread is named ``mcpsync-...`` and joined, bounded, when its owner closes."""
