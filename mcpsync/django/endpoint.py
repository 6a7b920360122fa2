"""``mcp_endpoint(server)``: the MCP endpoint as a view in the project's URLconf.

Mounted beside Django (:func:`mcpsync.http.mount`), ``/mcp`` is answered before Django
sees the request: no middleware, no ``ALLOWED_HOSTS``, no ``request.user``. As a view, the
request goes through Django like any other, and the view hands it to mcpsync's own WSGI
app (:class:`~mcpsync.http.McpWsgiApp`, built once per endpoint) through
:class:`mcpsync.http.embedded.EmbeddedEndpoint`, the hand-over every framework adapter
shares: the request's WSGI ``environ`` with its body, on the thread Django serves it on,
every message acting as the request's user, each handshake-era session kept to the user
that created it. mcpsync's answer becomes the view's response: JSON as an ``HttpResponse``,
an SSE stream as a ``StreamingHttpResponse`` whose events reach the client as they are
written. What stays here is Django's own: ``ALLOWED_HOSTS`` and origins, finding the user
(``request.user``, DRF), the response classes and the decisions below.

Decisions (docs/django.md says the same to users):

* **CSRF.** The view is ``csrf_exempt``. A browser can only send a cross-site request
  with the user's cookies as a "simple" request; an MCP POST must be
  ``Content-Type: application/json`` (else 415), a GET/DELETE needs ``Mcp-Session-Id``, and
  neither is simple, so a foreign page's request needs a CORS preflight that nothing here
  answers. Besides, a request carrying an ``Origin`` is refused (403) unless that origin
  is this site's own, one of ``CSRF_TRUSTED_ORIGINS`` or of ``MCPSYNC["ALLOWED_ORIGINS"]``.
* **Hosts.** Django's ``ALLOWED_HOSTS`` is the check (``request.get_host()``); mcpsync's
  own loopback-only default does not apply on top of it.
* **Who.** ``request.user`` as Django's middleware set it (sessions, ``RemoteUserMiddleware``,
  anything); else the DRF authentication classes given, if any; else, with ``auth=`` (a
  :class:`~mcpsync.auth.server.ResourceServer`), the user ``token_user(access_token)``
  returns. An anonymous request is refused unless anonymous access is allowed: 401 with
  mcpsync's ``WWW-Authenticate`` challenge when ``auth=`` is set (the client can get a
  token), else 403 (an MCP client cannot log in to a Django session).
* **Login redirects.** The view is exempt from ``LoginRequiredMiddleware``: that one would
  answer an MCP client with a redirect to an HTML login page; the check above answers it
  in MCP's terms instead (and is on by default).
* **Compression.** Django's ``GZipMiddleware`` compresses a streamed response through a
  gzip stream it never flushes: SSE events would sit in zlib's buffer until kilobytes had
  piled up or the stream ended. For an SSE answer the view removes ``gzip`` from the
  request's ``Accept-Encoding`` before the middleware looks at it, so the stream goes out
  uncompressed (``manage.py check`` warns about other compressing middleware it does not
  know to be safe).
* **Transactions.** The view is ``non_atomic_requests``: under ``ATOMIC_REQUESTS`` a
  transaction would otherwise stay open for as long as an SSE stream lasts. Handlers run
  their own queries, each thread with its own connection (:mod:`mcpsync.django.orm`).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..http.embedded import EmbeddedEndpoint, Refused, is_authenticated
from ..http.wsgi import McpWsgiApp
from . import conf
from .server_hooks import install
from .users import user_key

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponseBase

    from ..server.server import ServerCore

logger = logging.getLogger("mcpsync.django")


def _refusal(refused: Refused) -> HttpResponseBase:
    from django.http import HttpResponse

    response = HttpResponse(refused.body, status=refused.status,
                            content_type="application/json")
    if refused.challenge:
        response["WWW-Authenticate"] = refused.challenge
    return response


class Endpoint:
    """One MCP endpoint of a Django project: the view (:meth:`view`) and the mcpsync app
    it runs. Thread-safe (Django calls the view from many threads at once)."""

    def __init__(self, server: ServerCore, *, allow_anonymous: bool | None = None,
                 token_user: Callable[[Any], Any] | str | None = None,
                 authentication_classes: Iterable[Any] | None = None,
                 allowed_origins: Iterable[str] | None = None, **options: Any) -> None:
        self.server = server
        classes = (authentication_classes if authentication_classes is not None
                   else conf.get("AUTHENTICATION_CLASSES"))
        self.authentication_classes = [conf.load(c) for c in classes or ()]
        self.allowed_origins = frozenset(
            o.lower().rstrip("/") for o in (allowed_origins if allowed_origins is not None
                                            else conf.get("ALLOWED_ORIGINS")))
        merged = {**conf.get("OPTIONS"), **options}
        merged.update(path=None, allowed_hosts=["*"], allowed_origins=["*"])
        install(server)
        #: The hand-over to mcpsync's app: who may come in, whose sessions.
        self.embedded = EmbeddedEndpoint(
            McpWsgiApp(server, **merged), user_key=user_key,
            allow_anonymous=bool(conf.get("ALLOW_ANONYMOUS") if allow_anonymous is None
                                 else allow_anonymous),
            token_user=conf.load(token_user if token_user is not None
                                 else conf.get("TOKEN_USER")))

    @property
    def app(self) -> McpWsgiApp:
        """mcpsync's WSGI app that answers the requests (``close()`` it to stop its
        threads)."""
        return self.embedded.app

    # -- the view ------------------------------------------------------------------------

    def view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """The Django view: refuse what Django-side checks refuse, else answer with
        mcpsync's app."""
        request.get_host()  # ALLOWED_HOSTS (DisallowedHost: Django's own 400)
        origin = request.META.get("HTTP_ORIGIN")
        if origin is not None and not self._origin_allowed(request, origin):
            return _refusal(Refused(403, f"Forbidden: Origin {origin!r} is not allowed"))
        user = self._user(request)
        if isinstance(user, Refused):
            return _refusal(user)
        # The body is read through the request (bounded by Content-Length); Django hands
        # back the body it already read when a middleware read request.body first.
        answer = self.embedded.call(request.environ, request=request, user=user,
                                    body=request, script_name=request.path)
        response: HttpResponseBase
        if answer.stream is not None:
            from django.http import StreamingHttpResponse

            # Compressing middleware must leave the stream alone (see the module's notes).
            request.META["HTTP_ACCEPT_ENCODING"] = ""
            response = StreamingHttpResponse(answer.stream, status=answer.code,
                                             reason=answer.reason or None)
        else:
            from django.http import HttpResponse

            response = HttpResponse(answer.data, status=answer.code,
                                    reason=answer.reason or None)
        for name, value in answer.headers:
            response[name] = value
        return response

    def _origin_allowed(self, request: HttpRequest, origin: str) -> bool:
        from django.conf import settings

        value = origin.strip().lower().rstrip("/")
        if value in self.allowed_origins or "*" in self.allowed_origins:
            return True
        trusted = {o.lower().rstrip("/") for o in getattr(settings, "CSRF_TRUSTED_ORIGINS", ())}
        if value in trusted:
            return True
        parts = urlsplit(value)
        return bool(parts.scheme == request.scheme
                    and parts.netloc == request.get_host().lower())

    # -- who ---------------------------------------------------------------------------------

    def _user(self, request: HttpRequest) -> Any:
        """The user the request acts as (Django's anonymous user for nobody), or
        :class:`Refused`: ``request.user``, else what DRF's classes find, else what the
        shared admission says (an access token's user, anonymous when allowed)."""
        user = getattr(request, "user", None)
        if not is_authenticated(user) and self.authentication_classes:
            user = self._drf_user(request)
            if isinstance(user, Refused):
                return user
        admitted = self.embedded.admit(user, request.META.get("HTTP_AUTHORIZATION"))
        if admitted is None:
            from django.contrib.auth.models import AnonymousUser

            return AnonymousUser()
        return admitted

    def _drf_user(self, request: HttpRequest) -> Any:
        """The user DRF's authentication classes find (``request.user`` is set to it, as
        DRF does); their refusal (a bad token) is answered as DRF would, 401 or 403."""
        from rest_framework.exceptions import APIException
        from rest_framework.request import Request as DrfRequest

        drf = DrfRequest(request, authenticators=[cls() for cls in self.authentication_classes])
        try:
            return drf.user
        except APIException as exc:
            challenge = None
            if drf.authenticators:
                challenge = drf.authenticators[0].authenticate_header(drf)
            status = 401 if challenge and exc.status_code in (401, 403) else exc.status_code
            return Refused(status, f"Unauthorized: {exc.detail}", challenge)


def mcp_endpoint(server: ServerCore | None = None, **options: Any) -> Callable[..., Any]:
    """A Django view serving ``server`` (default: the project's server,
    :func:`mcpsync.django.get_server`) over Streamable HTTP, both eras::

        urlpatterns = [path("mcp", mcp_endpoint(server)), ...]

    ``allow_anonymous``: serve requests of nobody (default: ``MCPSYNC["ALLOW_ANONYMOUS"]``,
    false). ``authentication_classes``: DRF authentication classes tried when Django's
    middleware found no user. ``token_user``: ``fn(access_token) -> user`` (or its dotted
    path), for ``auth=`` bearer tokens. ``allowed_origins``: browser origins let in besides
    the site's own and ``CSRF_TRUSTED_ORIGINS``. Every other keyword goes to
    :class:`~mcpsync.http.McpWsgiApp` (on top of ``MCPSYNC["OPTIONS"]``). The returned view
    has the endpoint as ``view.endpoint``."""
    if server is None:
        from .site import get_server

        server = get_server()
    endpoint = Endpoint(server, **options)
    _endpoints.add(endpoint)
    view = _decorated(endpoint.view)
    view.endpoint = endpoint  # type: ignore[attr-defined]
    _check_installed()
    return view


_endpoints: weakref.WeakSet[Endpoint] = weakref.WeakSet()


def close_endpoints() -> None:
    """Close the app of every endpoint made in this process (its handler threads, its
    sessions, the server's shutdown): what ``manage.py mcp serve`` does on exit."""
    for endpoint in list(_endpoints):
        endpoint.app.close()


def _decorated(fn: Callable[..., Any]) -> Callable[..., Any]:
    from django.db import transaction
    from django.views.decorators.csrf import csrf_exempt

    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return fn(request, *args, **kwargs)

    view = transaction.non_atomic_requests(csrf_exempt(view))
    try:
        # Django 5.1+
        from django.contrib.auth.decorators import (
            login_not_required,
        )
    except ImportError:
        return view
    return login_not_required(view)  # type: ignore[no-any-return]


def _check_installed() -> None:
    from django.apps import apps

    if apps.ready and not apps.is_installed("mcpsync.django"):
        logger.warning('mcpsync.django: add "mcpsync.django" to INSTALLED_APPS (its '
                       "system checks, autodiscovery of each app's mcp.py and the mcp "
                       "management command come with it)")


__all__ = ["Endpoint", "close_endpoints", "mcp_endpoint"]
