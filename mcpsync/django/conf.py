"""The ``MCPSYNC`` setting: what a Django project configures its MCP server with.

One dictionary in ``settings.py``, read when it is needed (never at import, so importing
``mcpsync.django`` needs no configured settings)::

    MCPSYNC = {
        "NAME": "shop",                  # the server's name (the default server only)
        "SERVER": "shop.mcp_server:server",  # or: use this Server instead of a default one
        "PATH": "mcp",                   # where include("mcpsync.django.urls") puts it
        "ALLOW_ANONYMOUS": False,        # anonymous requests are refused (the default)
        "AUTODISCOVER": True,            # import every installed app's mcp.py at start-up
        "OPTIONS": {"json_window": 0.5}, # McpWsgiApp keywords (limits, stores, auth...)
        "TOKEN_USER": "shop.auth:user_for_token",  # bearer token -> Django user
        "AUTHENTICATION_CLASSES": ["rest_framework.authentication.TokenAuthentication"],
        "ALLOWED_ORIGINS": ["https://app.example.com"],
    }

Unknown keys are reported by ``manage.py check`` (``mcpsync.E001``), so a misspelt key is
found before production rather than silently ignored.
"""

from __future__ import annotations

from typing import Any, Final

#: Every key the setting may hold, with its default.
DEFAULTS: Final[dict[str, Any]] = {
    "NAME": "django",
    "VERSION": "1.0.0",
    "SERVER": None,
    "PATH": "mcp",
    "ALLOW_ANONYMOUS": False,
    "AUTODISCOVER": True,
    "OPTIONS": {},
    "TOKEN_USER": None,
    "AUTHENTICATION_CLASSES": None,
    "ALLOWED_ORIGINS": (),
}


def raw() -> dict[str, Any]:
    """The project's ``MCPSYNC`` setting as given (``{}`` when it has none)."""
    from django.conf import settings

    value = getattr(settings, "MCPSYNC", {})
    return dict(value) if isinstance(value, dict) else {}


def get(key: str) -> Any:
    """One key of the ``MCPSYNC`` setting, or its default."""
    return raw().get(key, DEFAULTS[key])


def unknown_keys() -> list[str]:
    """The keys of ``MCPSYNC`` mcpsync does not know (a typo, most likely)."""
    return sorted(set(raw()) - set(DEFAULTS))


def load(value: Any) -> Any:
    """``value`` itself, or the object a ``"module:attr"``/``"module.attr"`` path names."""
    if not isinstance(value, str):
        return value
    from django.utils.module_loading import import_string

    return import_string(value.replace(":", "."))


__all__ = ["DEFAULTS", "get", "load", "raw", "unknown_keys"]
