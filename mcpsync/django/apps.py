# mypy: allow-subclassing-any
"""The Django app ``mcpsync.django``: its system checks, and the autodiscovery of each
installed app's ``mcp.py`` once the app registry is ready."""

from __future__ import annotations

from django.apps import AppConfig


class McpsyncConfig(AppConfig):
    """``"mcpsync.django"`` in ``INSTALLED_APPS``."""

    name = "mcpsync.django"
    label = "mcpsync"
    verbose_name = "MCP (mcpsync)"

    def ready(self) -> None:
        from . import checks, conf, site

        checks.register()
        if conf.get("AUTODISCOVER"):
            site.autodiscover()
