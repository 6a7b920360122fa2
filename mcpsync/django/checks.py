"""``manage.py check``: the misconfigurations a user would otherwise find in production.

* ``mcpsync.E001`` — ``MCPSYNC`` has a key mcpsync does not know (a typo is otherwise
  silently ignored).
* ``mcpsync.W001`` — no shared ``request_state_key``: with several worker processes (any
  production deployment under gunicorn), a 2026-07-28 retry that reaches another worker
  than the one that asked the question fails. Only when ``DEBUG`` is off.
* ``mcpsync.W002`` — a compressing middleware other than Django's ``GZipMiddleware`` (which
  the endpoint opts out of for SSE) is installed: it may hold SSE events back.
* ``mcpsync.W003`` — persistent database connections (``CONN_MAX_AGE`` > 0 or ``None``):
  each handler thread keeps one, so the database must allow as many per process as the
  server's ``limits.max_handlers`` besides the WSGI server's threads.
"""

from __future__ import annotations

from typing import Any

from django.core import checks as django_checks

from . import conf

_SAFE_COMPRESSION = "django.middleware.gzip.GZipMiddleware"
_COMPRESSING = ("gzip", "compress", "brotli", "zstd", "deflate")


def _config(app_configs: Any, **kwargs: Any) -> list[django_checks.CheckMessage]:
    from django.conf import settings

    messages: list[django_checks.CheckMessage] = []
    unknown = conf.unknown_keys()
    if unknown:
        messages.append(django_checks.Error(
            f"MCPSYNC has unknown keys: {', '.join(unknown)}",
            hint=f"Known keys: {', '.join(sorted(conf.DEFAULTS))}.", id="mcpsync.E001"))
    if not settings.DEBUG:
        from .site import get_server

        if not get_server()._dispatcher.state_key_shared:
            messages.append(django_checks.Warning(
                "The MCP server has no request_state_key shared by its worker processes.",
                hint="Several workers (gunicorn --workers N) each make up a key, and a "
                     "2026-07-28 client's retry that reaches another worker fails. Set "
                     "MCPSYNC_REQUEST_STATE_KEY in the environment of every worker, or "
                     "Server(request_state_key=...).", id="mcpsync.W001"))
    for path in getattr(settings, "MIDDLEWARE", None) or ():
        lowered = str(path).lower()
        if path != _SAFE_COMPRESSION and any(word in lowered for word in _COMPRESSING):
            messages.append(django_checks.Warning(
                f"{path} may compress (and so hold back) the MCP endpoint's SSE streams.",
                hint="Exclude the MCP path from it: mcpsync opts out of Django's own "
                     "GZipMiddleware only.", id="mcpsync.W002"))
    for alias, database in getattr(settings, "DATABASES", {}).items():
        if database.get("CONN_MAX_AGE", 0) != 0:
            messages.append(django_checks.Info(
                f"Database {alias!r} keeps connections open (CONN_MAX_AGE): each MCP "
                "handler thread keeps one of its own.",
                hint="Allow the server's limits.max_handlers more connections per process.",
                id="mcpsync.I001"))
    return messages


def register() -> None:
    """Register the checks (the app config calls this when Django is ready)."""
    django_checks.register(_config, "mcpsync")


__all__ = ["register"]
