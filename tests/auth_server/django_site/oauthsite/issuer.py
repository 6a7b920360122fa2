"""The site's authorization server: Django's users, Django's templates, the ORM store."""

from django.conf import settings

from mcpsync.auth.issuer import AuthorizationServer, DocumentPolicy
from mcpsync.django.oauth.hooks import django_consent, django_login_url, django_user
from mcpsync.django.oauth.store import DjangoIssuerStore

issuer = AuthorizationServer(
    settings.SITE_URL, resources=[settings.SITE_URL + "/mcp"], store=DjangoIssuerStore(),
    secret_key=settings.SECRET_KEY, scopes_supported=["mcp"],
    current_user=django_user, login_url=django_login_url, render_consent=django_consent,
    metadata_documents=DocumentPolicy(allow_private_addresses=True, allow_http=True))
