"""Client ID Metadata Documents: fetching a client's metadata by its ``client_id`` URL.

A client with no prior relationship to this server names itself by an HTTPS URL; the
server fetches the JSON document there (MCP 2025-11-25 and 2026-07-28, "Client ID
Metadata Documents"). That makes the authorization endpoint a way for anyone to make the
server send a request to a URL of their choosing, so the fetch is guarded (the spec's
SSRF consideration, and draft-ietf-oauth-client-id-metadata-document §6):

* **The address is checked, then used.** The host is resolved once; every address it
  resolves to must be public (loopback, private, link-local, shared, multicast, reserved
  and unspecified addresses are refused, IPv4-mapped IPv6 included), and the connection
  goes to the checked address, with TLS verifying the host name. A DNS answer that
  changes between check and connect (rebinding) cannot redirect the fetch.
* **No redirects** are followed (a redirect is a refusal).
* **One deadline for the whole fetch** (the name lookup, connect, headers, body: a
  document trickled a byte at a time is cut off), and **a size bound** (the body is read
  in chunks and abandoned past ``max_bytes``, whatever it declares).
* The document must be JSON, its ``client_id`` exactly the URL, with ``redirect_uris``
  and ``client_name``; it is validated like a registration.

``allow_private_addresses`` and ``allow_http`` exist for tests and development on one
machine only.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ...threads.pool import PoolFullError, WorkerPool

__all__ = ["DocumentError", "DocumentPolicy", "fetch_metadata_document", "is_document_url"]


class DocumentError(Exception):
    """The client's metadata document cannot be used (its message says why, for the
    authorization error page; it never contains the document)."""


@dataclass(frozen=True)
class DocumentPolicy:
    """How metadata documents are fetched. ``timeout``: seconds for the whole fetch.
    ``max_bytes``: the largest document read. ``cache_seconds``: how long a document is
    kept when its answer sets no ``Cache-Control: max-age`` (a ``max-age`` is honoured
    up to ``max_cache_seconds``). ``allow_private_addresses`` / ``allow_http``: for tests
    on loopback only, never in production."""

    timeout: float = 5.0
    max_bytes: int = 16 * 1024
    cache_seconds: float = 3600.0
    max_cache_seconds: float = 24 * 3600.0
    allow_private_addresses: bool = False
    allow_http: bool = False


def is_document_url(client_id: str) -> bool:
    """Whether a ``client_id`` is a URL (a metadata document's), not a registered id."""
    return client_id.startswith(("https://", "http://"))


def _check_url(url: str, policy: DocumentPolicy) -> tuple[str, str, int, str]:
    parts = urlsplit(url)
    schemes = ("https", "http") if policy.allow_http else ("https",)
    if parts.scheme not in schemes:
        raise DocumentError("a client_id URL must use https")
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise DocumentError("a client_id URL must name a host, without credentials")
    if parts.fragment or not parts.path or parts.path == "/":
        raise DocumentError("a client_id URL must have a path and no fragment")
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        raise DocumentError("a client_id URL must not have dot segments")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise DocumentError("a client_id URL has an invalid port") from None
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port, target


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return bool(ip.is_global) and not (ip.is_multicast or ip.is_reserved
                                       or ip.is_unspecified or ip.is_loopback
                                       or ip.is_link_local or ip.is_private)


#: Where host names are resolved: ``getaddrinfo`` takes no timeout, so it runs on a thread
#: of this small pool and the fetch waits for it only until its deadline (the thread ends
#: the lookup on its own; idle threads retire after 5 s).
_RESOLVERS = WorkerPool(4, name="mcpsync-cimd-dns", max_backlog=64, idle_timeout=5.0)


def _lookup(host: str, port: int, deadline: float) -> list[str]:
    done = threading.Event()
    box: list[Any] = []

    def job() -> None:
        try:
            box.append([str(info[4][0]) for info in
                        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)])
        except (OSError, UnicodeError) as exc:
            box.append(exc)
        finally:
            done.set()

    try:
        _RESOLVERS.submit(job)
    except PoolFullError:
        raise DocumentError("too many client metadata documents are being fetched") from None
    if not done.wait(max(0.0, deadline - time.monotonic())):
        raise DocumentError("fetching the client metadata document took too long")
    if isinstance(box[0], BaseException):
        raise DocumentError("the client_id URL's host does not resolve")
    return list(box[0])


def _resolve(host: str, port: int, policy: DocumentPolicy, deadline: float) -> str:
    """One address for ``host``, every one of its addresses having been checked."""
    addresses = _lookup(host, port, deadline)
    if not addresses:
        raise DocumentError("the client_id URL's host does not resolve")
    if not policy.allow_private_addresses and not all(_public(a) for a in addresses):
        raise DocumentError("the client_id URL's host is not a public address")
    return addresses[0]


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the checked ``address``, whatever the host name resolves to now."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            raw, server_hostname=self.host)


def _max_age(cache_control: str | None, policy: DocumentPolicy) -> float:
    for directive in (cache_control or "").split(","):
        name, _, value = directive.strip().partition("=")
        if name.lower() in ("no-store", "no-cache"):
            return 0.0
        if name.lower() == "max-age" and value.strip().isdigit():
            return min(float(value.strip()), policy.max_cache_seconds)
    return policy.cache_seconds


def fetch_metadata_document(url: str, policy: DocumentPolicy) -> tuple[dict[str, Any], float]:
    """The metadata document at ``url`` (a ``client_id``) and for how many seconds it may
    be cached; :class:`DocumentError` when it cannot be fetched or used."""
    deadline = time.monotonic() + policy.timeout
    scheme, host, port, target = _check_url(url, policy)
    address = _resolve(host, port, policy, deadline)
    kind = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
    connection = kind(host, port, address, max(0.01, deadline - time.monotonic()))
    try:
        connection.request("GET", target, headers={"Accept": "application/json",
                                                   "User-Agent": "mcpsync-oauth"})
        response = connection.getresponse()
        if response.status != 200:
            raise DocumentError(f"the client metadata document answered {response.status}")
        declared = response.getheader("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > policy.max_bytes:
            raise DocumentError("the client metadata document is too large")
        body = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DocumentError("fetching the client metadata document took too long")
            if connection.sock is not None:
                connection.sock.settimeout(left)
            chunk = response.read1(8192)
            if not chunk:
                break
            body += chunk
            if len(body) > policy.max_bytes:
                raise DocumentError("the client metadata document is too large")
        cache = _max_age(response.getheader("Cache-Control"), policy)
    except (OSError, http.client.HTTPException):
        raise DocumentError("the client metadata document could not be fetched") from None
    finally:
        connection.close()
    try:
        document = json.loads(bytes(body))
    except ValueError:
        raise DocumentError("the client metadata document is not JSON") from None
    if not isinstance(document, dict):
        raise DocumentError("the client metadata document is not a JSON object")
    if document.get("client_id") != url:
        raise DocumentError("the client metadata document's client_id is not its URL")
    return document, cache
