"""The shop app: counts the database connections the process opened and has not closed
(for the tests' connection-leak check)."""

import threading

from django.apps import AppConfig

OPENED = []  # (thread name, raw sqlite3 connection), pruned of closed ones
_lock = threading.Lock()


def _closed(raw):
    import sqlite3

    try:
        raw.total_changes  # noqa: B018
    except sqlite3.ProgrammingError:
        return True
    return False


def open_connections():
    with _lock:
        OPENED[:] = [(name, raw) for name, raw in OPENED if not _closed(raw)]
        return [name for name, _ in OPENED]


class ShopConfig(AppConfig):
    name = "shop"
    default_auto_field = "django.db.models.AutoField"

    def ready(self):
        from django.db.backends.signals import connection_created

        def created(sender, connection, **kwargs):
            with _lock:
                OPENED.append((threading.current_thread().name, connection.connection))
                if len(OPENED) > 2000:
                    OPENED[:] = [(n, r) for n, r in OPENED if not _closed(r)]

        connection_created.connect(created, weak=False)
