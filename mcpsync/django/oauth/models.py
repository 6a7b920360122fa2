# mypy: allow-subclassing-any
"""The authorization server's state as Django models (secrets stored hashed): one table
per record of :mod:`mcpsync.auth.issuer.store`."""

from __future__ import annotations

from django.db import models


class OAuthClient(models.Model):
    client_id = models.CharField(max_length=2048, unique=True)
    metadata = models.JSONField()
    source = models.CharField(max_length=32)
    secret_hash = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.FloatField()
    expires_at = models.FloatField(null=True, blank=True)

    class Meta:
        verbose_name = "OAuth client"

    def __str__(self) -> str:
        return str(self.metadata.get("client_name") or self.client_id)


class OAuthCode(models.Model):
    code_hash = models.CharField(max_length=64, unique=True)
    record = models.JSONField()
    expires_at = models.FloatField(db_index=True)
    used = models.BooleanField(default=False)


class OAuthGrant(models.Model):
    """What a user granted a client (shown and revoked in the admin)."""

    grant_id = models.CharField(max_length=64, unique=True)
    client_id = models.CharField(max_length=2048)
    subject = models.CharField(max_length=255, db_index=True)
    scope = models.TextField(blank=True)
    resource = models.CharField(max_length=2048)
    created_at = models.FloatField()
    claims = models.JSONField(default=dict)
    revoked = models.BooleanField(default=False)

    class Meta:
        verbose_name = "OAuth grant"

    def __str__(self) -> str:
        return f"{self.subject} -> {self.client_id}"


class OAuthToken(models.Model):
    token_hash = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=16)
    grant_id = models.CharField(max_length=64, db_index=True)
    expires_at = models.FloatField(db_index=True)
    rotated = models.BooleanField(default=False)


class OAuthKey(models.Model):
    kid = models.CharField(max_length=64, unique=True)
    private_pem = models.TextField()
    created_at = models.FloatField()
