"""The hot POST of the HTTP client: through the session's own urllib3 pool, skipping the
parts of ``requests`` that a plain POST to our endpoint does not use.

``requests.Session.post`` spends about a millisecond of CPU per call on machinery that an
MCP POST on the transport's *own* session has no use for: preparing the request (URL
parsing, IDNA, header merging), the hook dispatch, the environment and proxy lookup, the
cookie jar (``http.cookiejar`` is slow) on the way out and back, the redirect loop. Measured
against a canned server, the POST costs ~1.3–1.7 ms of CPU through ``Session.post`` and
~0.5–0.6 ms through the adapter's urllib3 pool directly (benchmarks/client.py).

So :class:`DirectPost` sends through the very pool ``Session.post`` would use (the
session's ``HTTPAdapter``, same TLS settings, same retries, same timeouts) and hands back
the same :class:`requests.Response` (its ``raw`` the urllib3 response, as ``requests``
builds it): everything after the POST — reading, SSE, bounds, aborting — is one code path.
It is used only while nothing it skips applies (:meth:`DirectPost.usable`): never for a
caller's session, a session with ``auth`` (OAuth answers 401 in a response hook), proxies,
hooks, or cookies. A server that sets a cookie has it stored in the session's jar as
``requests`` would, and every later POST goes through ``requests`` (which sends it back);
an answer that is a redirect is dropped and the POST made again through ``requests``, which
follows it. Failures are raised as the same ``requests`` exceptions ``HTTPAdapter.send``
raises, so the transport's error mapping sees no difference.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

import requests
from requests.adapters import HTTPAdapter
from requests.cookies import extract_cookies_to_jar
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers
from urllib3.exceptions import (
    ClosedPoolError,
    ConnectTimeoutError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
)
from urllib3.exceptions import HTTPError as Urllib3HTTPError
from urllib3.exceptions import InvalidHeader as Urllib3InvalidHeader
from urllib3.exceptions import ProxyError as Urllib3ProxyError
from urllib3.exceptions import SSLError as Urllib3SSLError
from urllib3.util import Timeout

from .deadline import DeadlineAdapter

#: Answers ``requests`` would follow (``requests.sessions.REDIRECT_STATI``).
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
#: The most endpoints whose pools are remembered (the POST URL, and a 2024-11-05 server's
#: endpoint URL: two in practice).
_MAX_POOLS: Final = 8


class DirectPost:
    """POSTs on ``session`` (the transport's own) through its adapter's pool. Thread-safe."""

    def __init__(self, session: requests.Session) -> None:
        self._session = session
        self._lock = threading.Lock()
        #: url -> (the urllib3 pool, the request as prepared once, its path): the pool
        #: lookup and URL parsing done once per endpoint, not per call.
        self._pools: dict[str, _Endpoint] = {}

    def usable(self, url: str) -> bool:
        """Whether a POST to ``url`` through the pool is exactly what ``Session.post``
        would send: no auth, proxies, hooks or cookies, and the stock adapter."""
        session = self._session
        return (session.auth is None and not session.proxies and not session.cert
                and not any(session.hooks.values()) and not _has_cookies(session)
                and self._endpoint(url) is not None)

    def post(self, url: str, body: bytes, headers: Mapping[str, str],
             timeout: tuple[float, float]) -> requests.Response:
        """``session.post(url, data=body, headers=headers, stream=True, timeout=timeout)``."""
        endpoint = self._endpoint(url)
        if endpoint is None:
            return self._fallback(url, body, headers, timeout)
        prepared = endpoint.prepared
        merged = _merged(self._session.headers, headers)
        try:
            raw = endpoint.pool.urlopen(
                "POST", endpoint.path, body=body, headers=merged, redirect=False,
                assert_same_host=False, preload_content=False, decode_content=False,
                retries=endpoint.adapter.max_retries,
                timeout=Timeout(connect=timeout[0], read=timeout[1]), chunked=False)
        except ClosedPoolError:
            # The adapter's pool manager let this pool go (more hosts than it keeps):
            # nothing was sent; ``requests`` finds or makes the pool again.
            with self._lock:
                self._pools.pop(url, None)
            return self._fallback(url, body, headers, timeout)
        except BaseException as exc:
            _raise_as_requests(exc, prepared)
            raise
        if raw.status in _REDIRECTS and raw.headers.get("location"):
            # Unread, so its connection is closed, then given back (as Response.close()
            # does): never reused with a body still in it.
            raw.close()
            raw.release_conn()
            return self._fallback(url, body, headers, timeout)
        response = requests.Response()
        response.status_code = raw.status
        response.headers = CaseInsensitiveDict(raw.headers)
        response.encoding = get_encoding_from_headers(response.headers)
        response.raw = raw
        response.reason = raw.reason
        response.url = url
        response.request = prepared
        response.connection = endpoint.adapter
        if "set-cookie" in response.headers:
            # Kept as ``requests`` keeps them; the next POST goes through it (usable()).
            extract_cookies_to_jar(  # type: ignore[no-untyped-call]
                self._session.cookies, prepared, raw)
            extract_cookies_to_jar(  # type: ignore[no-untyped-call]
                response.cookies, prepared, raw)
        return response

    def _fallback(self, url: str, body: bytes, headers: Mapping[str, str],
                  timeout: tuple[float, float]) -> requests.Response:
        return self._session.post(url, data=body, headers=dict(headers), stream=True,
                                  timeout=timeout)

    def _endpoint(self, url: str) -> _Endpoint | None:
        """``url``'s pool, worked out on first use; None when its adapter is not the stock
        one (or :class:`~mcpsync.transports.http.deadline.DeadlineAdapter`, which only
        tracks its connections so that a call's exchange can be ended) or the URL is one
        ``requests`` refuses (it then says why, on the slow path)."""
        with self._lock:
            known = self._pools.get(url)
        if known is not None:
            return known
        try:
            adapter = self._session.get_adapter(url)
            if (type(adapter) not in (HTTPAdapter, DeadlineAdapter)
                    or not isinstance(adapter, HTTPAdapter)):
                return None
            prepared = requests.Request("POST", url).prepare()
            pool = adapter.get_connection_with_tls_context(
                prepared, self._session.verify, proxies=None, cert=self._session.cert)
            # What HTTPAdapter.send does to the pool on every request (the CA bundle and
            # client certificate checked on disk), done once.
            adapter.cert_verify(  # type: ignore[no-untyped-call]
                pool, url, self._session.verify, self._session.cert)
        except (requests.RequestException, ValueError, OSError):
            return None
        endpoint = _Endpoint(adapter, pool, prepared)
        with self._lock:
            if len(self._pools) >= _MAX_POOLS:
                self._pools.clear()
            self._pools[url] = endpoint
        return endpoint


class _Endpoint:
    """What is worked out once per URL: its adapter and pool, and the URL parsed (as a
    prepared request: ``requests`` errors and cookie extraction want one)."""

    __slots__ = ("adapter", "path", "pool", "prepared")

    def __init__(self, adapter: HTTPAdapter, pool: Any,
                 prepared: requests.PreparedRequest) -> None:
        self.adapter = adapter
        self.pool = pool
        self.prepared = prepared
        self.path: str = prepared.path_url


def _has_cookies(session: requests.Session) -> bool:
    """Whether the session's jar holds a cookie. Counting walks the jar's dicts without
    its lock, which a response on another thread may be adding to: a walk that trips
    over that counts as "yes" (the POST then goes through ``requests``)."""
    try:
        return len(session.cookies) > 0
    except RuntimeError:
        return True


def _merged(base: Mapping[str, str | bytes | None],
            ours: Mapping[str, str]) -> dict[str, Any]:
    """The session's headers overridden by ``ours`` (names compared without case), as
    ``requests`` merges them; a session header set to ``None`` is left out."""
    mine = {name.lower() for name in ours}
    merged: dict[str, Any] = {name: value for name, value in base.items()
                              if value is not None and name.lower() not in mine}
    merged.update(ours)
    return merged


def _raise_as_requests(exc: BaseException, request: requests.PreparedRequest) -> None:
    """Raise what ``HTTPAdapter.send`` raises for urllib3's ``exc`` (returns for anything
    it passes through unchanged)."""
    if isinstance(exc, (ProtocolError, OSError)):
        raise requests.ConnectionError(exc, request=request) from exc
    if isinstance(exc, MaxRetryError):
        reason = exc.reason
        if isinstance(reason, ConnectTimeoutError) and not isinstance(reason,
                                                                      NewConnectionError):
            raise requests.ConnectTimeout(exc, request=request) from exc
        if isinstance(reason, ResponseError):
            raise requests.exceptions.RetryError(exc, request=request) from exc
        if isinstance(reason, Urllib3ProxyError):
            raise requests.exceptions.ProxyError(exc, request=request) from exc
        if isinstance(reason, Urllib3SSLError):
            raise requests.exceptions.SSLError(exc, request=request) from exc
        raise requests.ConnectionError(exc, request=request) from exc
    if isinstance(exc, Urllib3ProxyError):
        raise requests.exceptions.ProxyError(exc) from exc
    if isinstance(exc, Urllib3SSLError):
        raise requests.exceptions.SSLError(exc, request=request) from exc
    if isinstance(exc, ReadTimeoutError):
        raise requests.ReadTimeout(exc, request=request) from exc
    if isinstance(exc, Urllib3InvalidHeader):
        raise requests.exceptions.InvalidHeader(exc, request=request) from exc
    if isinstance(exc, Urllib3HTTPError):
        return
