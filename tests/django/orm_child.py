"""Run in a child process by test_commands.py (Django is set up once per process): a
thread runs a query inside mcpsync.django's database scope with persistent connections
(CONN_MAX_AGE), so its connection stays open after the handler; the thread then ends,
and its connection must be closed at once, without waiting for the garbage collector.
Prints JSON: whether the connection was open after the handler and after the thread."""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
from pathlib import Path

SITE = Path(__file__).resolve().parent / "site"


def main() -> None:
    sys.path.insert(0, str(SITE))
    os.environ["DJANGO_SETTINGS_MODULE"] = "shopsite.settings"  # this child's own environ
    import django

    django.setup()
    gc.disable()  # what closes the connection must not be the collector
    from django.db import connection

    from mcpsync.django.orm import database_scope

    raw: list[object] = []
    after_handler: list[bool] = []

    def handler_thread() -> None:
        with database_scope(None):  # type: ignore[arg-type]
            from shop.models import Order

            Order.objects.count()
            raw.append(connection.connection)
        after_handler.append(_open(raw[0]))

    thread = threading.Thread(target=handler_thread, name="mcpsync-http-handler-test")
    thread.start()
    thread.join(30)
    print(json.dumps({"open_after_handler": after_handler[0],
                      "open_after_thread": _open(raw[0])}))


def _open(raw: object) -> bool:
    import sqlite3

    try:
        raw.total_changes  # type: ignore[attr-defined]  # noqa: B018
    except sqlite3.ProgrammingError:
        return False
    return True


if __name__ == "__main__":
    main()
