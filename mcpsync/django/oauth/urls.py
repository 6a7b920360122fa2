"""The authorization server's endpoints in a Django URLconf::

    from mcpsync.django.oauth.urls import issuer_urls

    urlpatterns = [path("", include(issuer_urls(server))), ...]

The views are exempt from Django's CSRF middleware: the token, registration and
revocation endpoints are not cookie-authenticated (a cookie CSRF check would only break
them), and the consent form carries its own token, bound to the user and the request.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ...auth.issuer.server import MAX_BODY_BYTES, AuthorizationServer, IssuerRequest

__all__ = ["issuer_request", "issuer_urls"]


def issuer_request(request: Any, issuer: str) -> IssuerRequest:
    """A Django ``HttpRequest`` as an :class:`IssuerRequest` (URL on the issuer's
    origin)."""
    import json

    origin = "{0.scheme}://{0.netloc}".format(urlsplit(issuer))
    query = request.META.get("QUERY_STRING", "")
    url = origin + request.path + (f"?{query}" if query else "")
    body = None
    form: dict[str, list[str]] = {}
    if request.method == "POST":
        if request.content_type == "application/json":
            try:
                body = json.loads(request.body)
            except ValueError:
                body = None
        else:
            form = {key: request.POST.getlist(key) for key in request.POST}
    return IssuerRequest(request.method, url, dict(request.headers),
                         query={key: request.GET.getlist(key) for key in request.GET},
                         form=form, json=body, native=request)


def issuer_urls(server: AuthorizationServer) -> list[Any]:
    """URL patterns for ``server``'s endpoints (include them at the site's root: the
    metadata must be at ``/.well-known/...``)."""
    from django.http import HttpResponse
    from django.urls import path
    from django.views.decorators.csrf import csrf_exempt

    @csrf_exempt  # type: ignore[untyped-decorator]
    def endpoint(request: Any) -> Any:
        if int(request.META.get("CONTENT_LENGTH") or 0) > MAX_BODY_BYTES:
            return HttpResponse('{"error": "invalid_request"}', status=413,
                                content_type="application/json")
        answered = server.handle(issuer_request(request, server.issuer))
        if answered is None:
            return HttpResponse(status=404)
        response = HttpResponse(answered.body, status=answered.status)
        for name, value in answered.headers:
            response[name] = value
        return response

    base = urlsplit(server.issuer).path.strip("/")
    prefix = f"{base}/" if base else ""
    routes = [server.metadata_path.lstrip("/"),
              *(f"{prefix}{name}" for name in ("authorize", "token", "revoke", "register",
                                                "jwks.json"))]
    return [path(route, endpoint, name=f"mcpsync-oauth-{i}") for i, route in enumerate(routes)]
