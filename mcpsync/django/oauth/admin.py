# mypy: allow-subclassing-any
"""The users' view in Django's admin: each grant (who let which client in, with which
scopes, since when), with a "revoke" action that ends the grant and its tokens."""

from __future__ import annotations

import time
from typing import Any

from django.contrib import admin

from .models import OAuthClient, OAuthGrant
from .store import DjangoIssuerStore


@admin.action(description="Revoke the selected grants (their tokens stop working)")  # type: ignore[untyped-decorator]
def revoke(modeladmin: Any, request: Any, queryset: Any) -> None:
    store = DjangoIssuerStore()
    for grant in queryset:
        store.revoke_grant(grant.grant_id)


@admin.register(OAuthGrant)
class OAuthGrantAdmin(admin.ModelAdmin):
    list_display = ("subject", "client_id", "scope", "resource", "since", "revoked")
    list_filter = ("revoked",)
    search_fields = ("subject", "client_id")
    actions = [revoke]
    readonly_fields = ("grant_id", "client_id", "subject", "scope", "resource",
                       "created_at", "claims", "revoked")

    @admin.display(description="since")  # type: ignore[untyped-decorator]
    def since(self, grant: OAuthGrant) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(grant.created_at))

    def has_add_permission(self, request: Any) -> bool:
        return False


@admin.register(OAuthClient)
class OAuthClientAdmin(admin.ModelAdmin):
    list_display = ("client_id", "__str__", "source")
    list_filter = ("source",)
    search_fields = ("client_id",)
    readonly_fields = ("secret_hash",)
