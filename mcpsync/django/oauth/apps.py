# mypy: allow-subclassing-any
"""The Django app ``mcpsync.django.oauth``: the authorization server's models and admin."""

from __future__ import annotations

from django.apps import AppConfig


class OAuthConfig(AppConfig):
    """``"mcpsync.django.oauth"`` in ``INSTALLED_APPS``."""

    name = "mcpsync.django.oauth"
    label = "mcpsync_oauth"
    verbose_name = "MCP authorization (mcpsync)"
    default_auto_field = "django.db.models.BigAutoField"
