"""``mcp_endpoint(server)``: the MCP endpoint as a view in the project's URLconf.

Mounted beside Django (:func:`mcpsync.http.mount`), ``/mcp`` is answered before Django
sees the request: no middleware, no ``ALLOWED_HOSTS``, no ``request.user``. As a view, the
request goes through Django like any other, and the view hands it to mcpsync's own WSGI
app (:class:`~mcpsync.http.McpWsgiApp`, built once per endpoint): the request's WSGI
``environ`` with its body, on the thread Django serves it on, inside
:func:`~mcpsync.django.users.serving` so that every message acts as the request's user.
mcpsync's answer becomes the view's response: JSON as an ``HttpResponse``, an SSE stream as
a ``StreamingHttpResponse`` whose events reach the client as they are written.

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

import json
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from ..http.wsgi import McpWsgiApp
from . import conf
from .server_hooks import install
from .users import ViewCall, forget, serving

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponseBase  # type: ignore[import-untyped]

    from ..server.server import ServerCore

logger = logging.getLogger("mcpsync.django")

#: Response headers that belong to one hop; Django's handler and WSGI server set their own.
_HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "transfer-encoding",
                                "proxy-connection", "upgrade", "te", "trailer"})
#: Sessions remembered per endpoint with the user that created them (the oldest is
#: forgotten past it; mcpsync holds at most ``max_sessions`` sessions anyway).
_MAX_OWNERS: Final = 100_000
#: What another user's session id is replaced with: no session is ever named so (ids are
#: random hex), so mcpsync answers it as an unknown session.
NOT_A_SESSION: Final = "not-a-session"


def _error_body(message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32600, "message": message}}).encode()


def _refusal(status: int, message: str, challenge: str | None = None) -> HttpResponseBase:
    from django.http import HttpResponse

    response = HttpResponse(_error_body(message), status=status,
                            content_type="application/json")
    if challenge:
        response["WWW-Authenticate"] = challenge
    return response


def _authenticated(user: Any) -> bool:
    return user is not None and bool(getattr(user, "is_authenticated", False))


class Endpoint:
    """One MCP endpoint of a Django project: the view (:meth:`view`) and the mcpsync app
    it runs. Thread-safe (Django calls the view from many threads at once)."""

    def __init__(self, server: ServerCore, *, allow_anonymous: bool | None = None,
                 token_user: Callable[[Any], Any] | str | None = None,
                 authentication_classes: Iterable[Any] | None = None,
                 allowed_origins: Iterable[str] | None = None, **options: Any) -> None:
        self.server = server
        self.allow_anonymous = bool(conf.get("ALLOW_ANONYMOUS") if allow_anonymous is None
                                    else allow_anonymous)
        self.token_user = conf.load(token_user if token_user is not None
                                    else conf.get("TOKEN_USER"))
        classes = (authentication_classes if authentication_classes is not None
                   else conf.get("AUTHENTICATION_CLASSES"))
        self.authentication_classes = [conf.load(c) for c in classes or ()]
        self.allowed_origins = frozenset(
            o.lower().rstrip("/") for o in (allowed_origins if allowed_origins is not None
                                            else conf.get("ALLOWED_ORIGINS")))
        merged = {**conf.get("OPTIONS"), **options}
        merged.update(path=None, allowed_hosts=["*"], allowed_origins=["*"])
        install(server)
        #: mcpsync's WSGI app that answers the requests (``close()`` it to stop its threads).
        self.app = McpWsgiApp(server, **merged)
        self._owners: OrderedDict[str, Any] = OrderedDict()
        self._owners_lock = threading.Lock()

    # -- the view ------------------------------------------------------------------------

    def view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """The Django view: refuse what Django-side checks refuse, else answer with
        mcpsync's app."""
        request.get_host()  # ALLOWED_HOSTS (DisallowedHost: Django's own 400)
        origin = request.META.get("HTTP_ORIGIN")
        if origin is not None and not self._origin_allowed(request, origin):
            return _refusal(403, f"Forbidden: Origin {origin!r} is not allowed")
        user = self._user(request)
        if not isinstance(user, _User):
            return user
        call = ViewCall(request, user.value)
        session = request.META.get("HTTP_MCP_SESSION_ID")
        environ = dict(request.environ)
        if session and not self._owner_matches(session, user.value):
            # Another user's session is answered by mcpsync exactly as a session that does
            # not exist (404, its error code, the request's id): no hint that it does.
            environ["HTTP_MCP_SESSION_ID"] = NOT_A_SESSION
        # Read through the request (bounded by Content-Length); Django hands back the body
        # it already read when a middleware read request.body first.
        environ["wsgi.input"] = request
        environ["SCRIPT_NAME"] = request.path
        environ["PATH_INFO"] = ""
        captured: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Callable[[bytes], object]:
            captured[:] = [status, headers]
            return lambda data: None

        try:
            with serving(call):
                body = self.app(environ, start_response)
        except BaseException:
            forget(call)
            raise
        status, headers = captured
        code, _, reason = status.partition(" ")
        streaming = any(k.lower() == "content-type" and v.startswith("text/event-stream")
                        for k, v in headers)
        created = next((v for k, v in headers if k.lower() == "mcp-session-id"), None)
        if created and not session:
            self._remember_owner(created, user.value)
        if streaming:
            from django.http import StreamingHttpResponse

            # Compressing middleware must leave the stream alone (see the module's notes).
            request.META["HTTP_ACCEPT_ENCODING"] = ""
            response: HttpResponseBase = StreamingHttpResponse(
                _streamed(body, call), status=int(code), reason=reason or None)
        else:
            from django.http import HttpResponse

            try:
                data = b"".join(body)
            finally:
                _close(body)
                forget(call)
            response = HttpResponse(data, status=int(code), reason=reason or None)
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP:
                response[name] = value
        return response

    def _origin_allowed(self, request: HttpRequest, origin: str) -> bool:
        from django.conf import settings  # type: ignore[import-untyped]

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

    def _user(self, request: HttpRequest) -> _User | HttpResponseBase:
        user = getattr(request, "user", None)
        if _authenticated(user):
            return _User(user)
        if self.authentication_classes:
            found = self._drf_user(request)
            if not isinstance(found, _User):
                return found
            if _authenticated(found.value):
                return found
            user = found.value
        if self.app.auth is not None and self.token_user is not None:
            verdict = self.app.auth.authenticate(request.META.get("HTTP_AUTHORIZATION"))
            from ..auth.server.resource import Refusal

            if not isinstance(verdict, Refusal):
                mapped = self.token_user(verdict)
                if _authenticated(mapped):
                    return _User(mapped)
                return _refusal(403, "Forbidden: this access token stands for no user of "
                                     "this site")
        if self.allow_anonymous or self.app.auth is not None:
            # With auth= the app answers a missing or bad token with its 401 challenge.
            if user is None:
                from django.contrib.auth.models import AnonymousUser  # type: ignore[import-untyped]

                user = AnonymousUser()
            return _User(user)
        return _refusal(403, "Forbidden: this MCP endpoint serves signed-in users only")

    def _drf_user(self, request: HttpRequest) -> _User | HttpResponseBase:
        """The user DRF's authentication classes find (``request.user`` is set to it, as
        DRF does); their refusal (a bad token) is answered as DRF would, 401 or 403."""
        from rest_framework.exceptions import APIException  # type: ignore[import-untyped]
        from rest_framework.request import Request as DrfRequest  # type: ignore[import-untyped]

        drf = DrfRequest(request, authenticators=[cls() for cls in self.authentication_classes])
        try:
            return _User(drf.user)
        except APIException as exc:
            challenge = None
            if drf.authenticators:
                challenge = drf.authenticators[0].authenticate_header(drf)
            status = 401 if challenge and exc.status_code in (401, 403) else exc.status_code
            return _refusal(status, f"Unauthorized: {exc.detail}", challenge)

    def _owner_matches(self, session: str, user: Any) -> bool:
        """A handshake-era session is used by the user that created it, only."""
        with self._owners_lock:
            if session not in self._owners:
                return True  # created elsewhere (another worker) or forgotten: mcpsync decides
            return bool(self._owners[session] == _user_key(user))

    def _remember_owner(self, session: str, user: Any) -> None:
        with self._owners_lock:
            self._owners[session] = _user_key(user)
            while len(self._owners) > _MAX_OWNERS:
                self._owners.popitem(last=False)


class _User:
    """A user found for a request (``None``/anonymous included), told apart from a
    refusal."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _user_key(user: Any) -> Any:
    """What identifies a user across requests (its primary key; ``None``: anonymous)."""
    if not _authenticated(user):
        return None
    return (type(user).__name__, getattr(user, "pk", None) or str(user))


def _close(body: Iterable[bytes]) -> None:
    close = getattr(body, "close", None)
    if close is not None:
        close()


def _streamed(body: Iterable[bytes], call: ViewCall) -> Iterator[bytes]:
    """The SSE answer, event by event; mcpsync's body closed when Django closes the
    response (the client left, or the stream ended)."""
    try:
        yield from body
    finally:
        _close(body)
        forget(call)


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
    from django.db import transaction  # type: ignore[import-untyped]
    from django.views.decorators.csrf import csrf_exempt  # type: ignore[import-untyped]

    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return fn(request, *args, **kwargs)

    view = transaction.non_atomic_requests(csrf_exempt(view))
    try:
        # Django 5.1+
        from django.contrib.auth.decorators import (  # type: ignore[import-untyped]
            login_not_required,
        )
    except ImportError:
        return view
    return login_not_required(view)  # type: ignore[no-any-return]


def _check_installed() -> None:
    from django.apps import apps  # type: ignore[import-untyped]

    if apps.ready and not apps.is_installed("mcpsync.django"):
        logger.warning('mcpsync.django: add "mcpsync.django" to INSTALLED_APPS (its '
                       "system checks, autodiscovery of each app's mcp.py and the mcp "
                       "management command come with it)")


__all__ = ["Endpoint", "close_endpoints", "mcp_endpoint"]
