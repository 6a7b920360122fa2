"""A second process on the bus, for the cross-process bus tests.

    python -m tests.redis.bus_worker URL PREFIX COUNT

Subscribes a :class:`~mcpsync.redis.bus.RedisBus` (prefix PREFIX), prints ``ready``, waits
for a line on stdin, publishes COUNT messages ``{"kind": "tick", "from": "child", "i": i}``,
then waits (bounded) until it has received its own COUNT and the parent's COUNT messages
(``"from": "parent"``), prints what it received as one JSON line and exits 0 (1 on a
timeout, printing what it had).
"""

from __future__ import annotations

import json
import sys
import threading

from mcpsync.redis.bus import RedisBus
from tests.helpers import LONG_WAIT as WAIT


def main(url: str, prefix: str, count: int) -> int:
    received: list[dict[str, object]] = []
    lock = threading.Lock()
    done = threading.Event()

    def on_message(message: dict[str, object]) -> None:
        with lock:
            received.append(message)
            if len(received) >= 2 * count:
                done.set()

    with RedisBus(url, prefix=prefix) as bus:
        bus.subscribe(on_message)
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(count):
            bus.publish({"kind": "tick", "from": "child", "i": i})
        ok = done.wait(WAIT)
    with lock:
        print(json.dumps(received), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
