"""The engine of a connection: its reader loop, the bounded handler pool, the table of
pending calls, and the one watchdog thread that ends waits at their deadlines. Other
packages start threads of their own for what only they know about (the HTTP client's
streams, the dev server's reader, Redis listeners, task runners, the stdio bridge); every
thread is named ``mcpsync-...`` and joined, bounded, when its owner closes."""
