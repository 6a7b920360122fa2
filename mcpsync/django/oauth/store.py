"""The :class:`~mcpsync.auth.issuer.store.IssuerStore` on Django's ORM (any database
Django supports), for the workers of a Django site.

Single use and rotation are conditional updates (``UPDATE ... WHERE used = false``): the
database decides which of two racing workers wins, whatever its isolation level, with no
read-then-write window. Revocation and rotation run in ``transaction.atomic``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ...auth.issuer.sql import DEFAULT_MAX_CLIENTS
from ...auth.issuer.store import (
    GRANT_GRACE,
    ClientRecord,
    CodeRecord,
    GrantRecord,
    KeyRecord,
    RefreshOutcome,
    StoreFullError,
    TokenRecord,
)

__all__ = ["DjangoIssuerStore"]


def _grant(row: Any) -> GrantRecord:
    return GrantRecord(grant_id=row.grant_id, client_id=row.client_id, subject=row.subject,
                       scope=row.scope, resource=row.resource, created_at=row.created_at,
                       claims=dict(row.claims or {}), revoked=row.revoked)


class DjangoIssuerStore:
    """The authorization server's state in the ``mcpsync.django.oauth`` models."""

    def __init__(self, *, max_clients: int = DEFAULT_MAX_CLIENTS) -> None:
        self.max_clients = max_clients

    def close(self) -> None:
        pass  # Django owns the connections

    # -- clients ----------------------------------------------------------------------
    def put_client(self, client: ClientRecord) -> None:
        from .models import OAuthClient

        with transaction.atomic():
            if client.source != "registered":
                exists = OAuthClient.objects.filter(client_id=client.client_id).exists()
                count = OAuthClient.objects.exclude(source="registered").count()
                if not exists and count >= self.max_clients:
                    raise StoreFullError(f"the store holds {count} clients, its bound")
            OAuthClient.objects.update_or_create(
                client_id=client.client_id,
                defaults={"metadata": client.metadata, "source": client.source,
                          "secret_hash": client.secret_hash, "created_at": client.created_at,
                          "expires_at": client.expires_at})

    def get_client(self, client_id: str, now: float) -> ClientRecord | None:
        from .models import OAuthClient

        row = OAuthClient.objects.filter(client_id=client_id).first()
        if row is None or (row.expires_at is not None and row.expires_at <= now):
            return None
        return ClientRecord(client_id=row.client_id, metadata=dict(row.metadata),
                            source=row.source, secret_hash=row.secret_hash,
                            created_at=row.created_at, expires_at=row.expires_at)

    def delete_client(self, client_id: str) -> None:
        from .models import OAuthClient

        OAuthClient.objects.filter(client_id=client_id).delete()

    # -- codes ------------------------------------------------------------------------
    def put_code(self, code: CodeRecord) -> None:
        from .models import OAuthCode

        OAuthCode.objects.create(code_hash=code.code_hash, expires_at=code.expires_at, record={
            "client_id": code.client_id, "redirect_uri": code.redirect_uri,
            "scope": code.scope, "resource": code.resource, "subject": code.subject,
            "code_challenge": code.code_challenge, "grant_id": code.grant_id,
            "claims": code.claims})

    def take_code(self, code_hash: str, now: float) -> tuple[CodeRecord | None, bool]:
        from .models import OAuthCode

        row = OAuthCode.objects.filter(code_hash=code_hash).first()
        if row is None:
            return None, False
        record = CodeRecord(code_hash=code_hash, expires_at=row.expires_at, **row.record)
        if row.expires_at <= now and not row.used:
            return None, False
        first = OAuthCode.objects.filter(code_hash=code_hash, used=False).update(used=True)
        return record, first != 1

    # -- grants and tokens --------------------------------------------------------------
    def put_grant(self, grant: GrantRecord) -> None:
        from .models import OAuthGrant

        OAuthGrant.objects.create(grant_id=grant.grant_id, client_id=grant.client_id,
                                  subject=grant.subject, scope=grant.scope,
                                  resource=grant.resource, created_at=grant.created_at,
                                  claims=grant.claims, revoked=grant.revoked)

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        from .models import OAuthGrant

        row = OAuthGrant.objects.filter(grant_id=grant_id).first()
        return _grant(row) if row is not None else None

    def grants_of(self, subject: str) -> list[GrantRecord]:
        from .models import OAuthGrant

        rows = OAuthGrant.objects.filter(subject=subject, revoked=False).order_by("created_at")
        return [_grant(row) for row in rows]

    def revoke_grant(self, grant_id: str) -> None:
        from .models import OAuthGrant, OAuthToken

        with transaction.atomic():
            OAuthGrant.objects.filter(grant_id=grant_id).update(revoked=True)
            OAuthToken.objects.filter(grant_id=grant_id).delete()

    def put_token(self, token: TokenRecord) -> None:
        from .models import OAuthToken

        OAuthToken.objects.create(token_hash=token.token_hash, kind=token.kind,
                                  grant_id=token.grant_id, expires_at=token.expires_at,
                                  rotated=token.rotated)

    def get_token(self, token_hash: str, now: float) -> TokenRecord | None:
        from .models import OAuthToken

        row = OAuthToken.objects.filter(token_hash=token_hash, expires_at__gt=now).first()
        if row is None:
            return None
        return TokenRecord(token_hash=row.token_hash, kind=row.kind, grant_id=row.grant_id,
                           expires_at=row.expires_at, rotated=row.rotated)

    def rotate_refresh(self, old_hash: str, new: TokenRecord,
                       now: float) -> tuple[RefreshOutcome, GrantRecord | None]:
        from .models import OAuthGrant, OAuthToken

        with transaction.atomic():
            row = OAuthToken.objects.filter(token_hash=old_hash, kind="refresh",
                                            expires_at__gt=now).first()
            grant_row = (OAuthGrant.objects.filter(grant_id=row.grant_id).first()
                         if row is not None else None)
            if row is None or grant_row is None or grant_row.revoked:
                return "unknown", None
            grant = _grant(grant_row)
            won = OAuthToken.objects.filter(token_hash=old_hash,
                                            rotated=False).update(rotated=True)
            if won != 1:
                self.revoke_grant(grant.grant_id)
                return "reused", grant
            OAuthToken.objects.create(token_hash=new.token_hash, kind="refresh",
                                      grant_id=grant.grant_id, expires_at=new.expires_at)
            return "rotated", grant

    # -- signing keys -----------------------------------------------------------------
    def signing_keys(self) -> list[KeyRecord]:
        from .models import OAuthKey

        return [KeyRecord(kid=row.kid, private_pem=row.private_pem, created_at=row.created_at)
                for row in OAuthKey.objects.order_by("-created_at", "kid")]

    def add_key(self, key: KeyRecord, *, keep: int) -> None:
        from .models import OAuthKey

        with transaction.atomic():
            OAuthKey.objects.get_or_create(kid=key.kid, defaults={
                "private_pem": key.private_pem, "created_at": key.created_at})
            stale = [row.pk for row in OAuthKey.objects.order_by("-created_at", "kid")[keep:]]
            OAuthKey.objects.filter(pk__in=stale).delete()

    # -- housekeeping -----------------------------------------------------------------
    def purge(self, now: float) -> None:
        from django.db.models import Q

        from .models import OAuthClient, OAuthCode, OAuthGrant, OAuthToken

        OAuthCode.objects.filter(expires_at__lte=now).delete()
        OAuthToken.objects.filter(expires_at__lte=now).delete()
        OAuthClient.objects.filter(expires_at__isnull=False, expires_at__lte=now).delete()
        live = OAuthToken.objects.values("grant_id")
        OAuthGrant.objects.filter(
            Q(revoked=True) | (Q(created_at__lte=now - GRANT_GRACE)
                               & ~Q(grant_id__in=live))).delete()
