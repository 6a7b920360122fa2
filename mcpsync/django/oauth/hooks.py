"""The site's own login and templates, for :class:`~mcpsync.auth.issuer.AuthorizationServer`:
``current_user=django_user, login_url=django_login_url, render_consent=django_consent``."""

from __future__ import annotations

import os
from urllib.parse import urlencode, urlsplit

from ...auth.issuer.consent import ConsentView
from ...auth.issuer.server import IssuerRequest, IssuerUser

__all__ = ["django_consent", "django_login_url", "django_user"]


def django_user(request: IssuerRequest) -> IssuerUser | None:
    """``request.user`` of the Django request: its primary key is the subject (stable
    when a username or an email changes), its full name (or username) is shown."""
    user = getattr(request.native, "user", None)
    if user is None or not user.is_authenticated:
        return None
    name = user.get_full_name() or user.get_username()
    return IssuerUser(subject=str(user.pk), name=name,
                      claims={"preferred_username": user.get_username()})


def django_login_url(request: IssuerRequest, next_url: str) -> str:
    """``settings.LOGIN_URL`` with ``next`` (a path on this site, which Django's
    ``LoginView`` accepts)."""
    from django.conf import settings
    from django.shortcuts import resolve_url

    parts = urlsplit(next_url)
    back = parts.path + (f"?{parts.query}" if parts.query else "")
    return f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': back})}"


def django_consent(request: IssuerRequest, view: ConsentView) -> str:
    """The template ``mcpsync/consent.html`` (the site's own when it has one; else the
    one shipped with mcpsync), autoescaped."""
    from django.template import Context, Template, TemplateDoesNotExist
    from django.template.loader import render_to_string

    try:
        return str(render_to_string("mcpsync/consent.html", {"view": view},
                                    request=request.native))
    except TemplateDoesNotExist:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                            "auth", "issuer", "templates", "mcpsync", "consent.html")
        with open(path, encoding="utf-8") as handle:
            return str(Template(handle.read()).render(Context({"view": view})))
