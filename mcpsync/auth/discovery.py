"""Finding who authorizes a protected MCP server, in the order the specification gives.

1. Protected Resource Metadata (RFC 9728): the ``resource_metadata`` URL of the 401's
   ``WWW-Authenticate``, then the well-known URL with the endpoint's path
   (``/.well-known/oauth-protected-resource/mcp``), then the root one. Its ``resource``
   must name the server being called (same origin, and a path that is the endpoint's or a
   parent of it), else the metadata is refused: a server must not send the client to an
   authorization server for another resource.
2. Authorization Server Metadata for the first of its ``authorization_servers``: RFC 8414
   (``/.well-known/oauth-authorization-server`` with the issuer's path appended), then
   OpenID Connect discovery (path appended, then path prepended). The document's
   ``issuer`` must be exactly the issuer the URL was built from (RFC 8414 §3.3).
3. 2025-03-26 back-compat: a server with no resource metadata is its own authorization
   server; if that has no metadata either, the default ``/authorize``, ``/token`` and
   ``/register`` at its origin are used.

Time: the walk is one question ("who authorizes this server?") asked of one party, so all
its fetches, of both documents, share one deadline (``OAuthLimits(fetch_timeout=)``, 10 s by
default) that the caller passes down; a server trickling its answers to several well-known URLs
costs the timeout once, not once per URL. When that deadline runs out the walk stops with
:class:`DiscoveryError` (a timeout is not "no metadata": it never falls back to the
2025-03-26 defaults).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..protocol.deadline import Deadline
from .errors import DiscoveryError, IssuerMismatchError, ResourceMismatchError
from .fetch import FETCH_ERRORS, Fetcher

logger = logging.getLogger("mcpsync.auth")

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class ResourceInfo:
    """What the protected resource said about itself (or what the client assumed)."""

    resource: str                       # the RFC 8707 ``resource`` to ask tokens for
    authorization_server: str           # the issuer to use
    scopes_supported: tuple[str, ...] | None = None
    from_metadata: bool = True          # False: 2025-03-26 back-compat (no PRM found)


@dataclass(frozen=True)
class ServerMetadata:
    """An authorization server's endpoints and capabilities (RFC 8414 fields)."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    from_metadata: bool = True  # False: the 2025-03-26 default endpoints

    def supports(self, key: str, value: str) -> bool:
        listed = self.raw.get(key)
        return isinstance(listed, list) and value in listed

    def listed(self, key: str) -> list[str] | None:
        value = self.raw.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        return None


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP endpoint (RFC 8707 / MCP): lower-case scheme and host,
    no default port, no query, no fragment; the path kept as it is."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and not ((scheme == "http" and port == 80)
                                 or (scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    path = parts.path
    return urlunsplit((scheme, host, path if path != "/" else "", "", ""))


def origin_of(url: str) -> str:
    parts = urlsplit(canonical_resource(url))
    return f"{parts.scheme}://{parts.netloc}"


def resource_covers(resource: str, server_url: str) -> bool:
    """True when the PRM ``resource`` names ``server_url`` or a parent of its path on the
    same origin (a root PRM for ``/mcp`` names the origin)."""
    try:
        claimed = urlsplit(canonical_resource(resource))
        actual = urlsplit(canonical_resource(server_url))
    except ValueError:
        return False
    if (claimed.scheme, claimed.netloc) != (actual.scheme, actual.netloc):
        return False
    base = claimed.path.rstrip("/")
    return actual.path == base or actual.path.startswith(base + "/") or base == ""


def prm_candidates(server_url: str, hinted: str | None) -> list[str]:
    origin = origin_of(server_url)
    path = urlsplit(server_url).path.rstrip("/")
    urls = [hinted] if hinted else []
    if path:
        urls.append(f"{origin}{PRM_WELL_KNOWN}{path}")
    urls.append(f"{origin}{PRM_WELL_KNOWN}")
    return list(dict.fromkeys(urls))


def as_metadata_candidates(issuer: str) -> list[str]:
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [f"{origin}{OAUTH_WELL_KNOWN}", f"{origin}{OIDC_WELL_KNOWN}"]
    return [f"{origin}{OAUTH_WELL_KNOWN}{path}", f"{origin}{OIDC_WELL_KNOWN}{path}",
            f"{origin}{path}{OIDC_WELL_KNOWN}"]


def _documents(fetcher: Fetcher, urls: list[str], headers: dict[str, str] | None,
               deadline: Deadline, what: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each of ``urls`` (in order) that answers 200 with a JSON object, and that object.
    A fetch that fails is skipped, unless the walk's deadline ran out: then
    :class:`DiscoveryError`, so the walk stops instead of reading "no answer" as "none"."""
    for url in urls:
        try:
            answer = fetcher.request("GET", url, headers=headers, deadline=deadline)
        except FETCH_ERRORS as exc:
            logger.info("%s at %s: %s", what, url, exc)
            if deadline.expired():
                raise DiscoveryError(f"no {what} within the {deadline.budget:g} s discovery "
                                     f"budget ({deadline.what})") from exc
            continue
        if answer.status == 200 and answer.body is not None:
            yield url, answer.body


def discover_resource(fetcher: Fetcher, server_url: str, hinted: str | None,
                      headers: dict[str, str] | None = None,
                      deadline: Deadline | None = None) -> ResourceInfo:
    """Protected Resource Metadata for ``server_url`` (see the module docstring), every
    fetch ending by ``deadline`` (default: the fetcher's ``timeout`` for the walk)."""
    budget = deadline or fetcher.deadline(f"discovering who authorizes {server_url}")
    for url, body in _documents(fetcher, prm_candidates(server_url, hinted), headers, budget,
                                "protected resource metadata"):
        servers = body.get("authorization_servers")
        if not (isinstance(servers, list) and servers and isinstance(servers[0], str)):
            raise DiscoveryError(f"the protected resource metadata at {url} names no "
                                 f"authorization_servers")
        resource = body.get("resource")
        if resource is not None and not (isinstance(resource, str)
                                         and resource_covers(resource, server_url)):
            raise ResourceMismatchError(
                f"the protected resource metadata at {url} is for resource "
                f"{resource!r}, not {canonical_resource(server_url)!r}: refusing it")
        scopes = body.get("scopes_supported")
        scope_list = (tuple(s for s in scopes if isinstance(s, str))
                      if isinstance(scopes, list) else None)
        return ResourceInfo(resource if isinstance(resource, str)
                            else canonical_resource(server_url),
                            servers[0], scope_list)
    # 2025-03-26: no resource metadata; the MCP server's origin is the authorization server.
    return ResourceInfo(canonical_resource(server_url), origin_of(server_url), None,
                        from_metadata=False)


def discover_server(fetcher: Fetcher, issuer: str, legacy: bool,
                    headers: dict[str, str] | None = None,
                    deadline: Deadline | None = None) -> ServerMetadata:
    """Authorization Server Metadata for ``issuer`` (see the module docstring), every
    fetch ending by ``deadline`` (default: the fetcher's ``timeout`` for the walk)."""
    budget = deadline or fetcher.deadline(f"discovering the metadata of {issuer}")
    for url, body in _documents(fetcher, as_metadata_candidates(issuer), headers, budget,
                                "authorization server metadata"):
        if body.get("issuer") != issuer:
            raise IssuerMismatchError(
                f"the authorization server metadata at {url} says its issuer is "
                f"{body.get('issuer')!r}, not {issuer!r}: refusing it")
        authorize = body.get("authorization_endpoint")
        token = body.get("token_endpoint")
        if not isinstance(token, str):
            raise DiscoveryError(f"the authorization server metadata at {url} has no "
                                 f"token_endpoint")
        registration = body.get("registration_endpoint")
        return ServerMetadata(issuer, authorize if isinstance(authorize, str) else "",
                              token, registration if isinstance(registration, str) else None,
                              body)
    if legacy:
        base = issuer.rstrip("/")
        return ServerMetadata(issuer, f"{base}/authorize", f"{base}/token",
                              f"{base}/register", {}, from_metadata=False)
    raise DiscoveryError(f"no authorization server metadata for {issuer!r} at "
                         f"{', '.join(as_metadata_candidates(issuer))}")
