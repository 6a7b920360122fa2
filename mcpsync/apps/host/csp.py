"""The Content-Security-Policy a host puts on a view, built from the ``_meta.ui.csp``
its resource declared, and the ``allow`` attribute from its ``permissions``.

The revision (SEP-1865, "Content Security Policy Enforcement"): the host MUST build the
policy from the declared domains, MUST NOT allow an undeclared one, and without
``ui.csp`` uses its restrictive default (no network, inline scripts and styles only).
Here ``connect-src`` is ``'none'`` unless domains are declared (the revision's default;
its example adds ``'self'``, which is nothing for a view whose origin is opaque anyway).

A declared "domain" is checked before it goes into the policy: a source that is not
``scheme://host[:port]`` (a wildcard ``*.`` first label allowed) is refused, so a server
cannot smuggle ``'unsafe-eval'``, ``*`` or ``; script-src *`` into it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ..wire import is_origin

#: The declared lists and where each goes.
_FIELDS: Final = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
#: ``permissions`` key -> Permission Policy feature (the iframe's ``allow``).
_FEATURES: Final = {"camera": "camera", "microphone": "microphone",
                    "geolocation": "geolocation", "clipboardWrite": "clipboard-write"}


class CspError(ValueError):
    """A declared source is not an origin: the view is not shown."""


def declared(csp: Any) -> dict[str, list[str]]:
    """The declared domains of ``_meta.ui.csp``, checked (``CspError`` for a bad one)."""
    lists: dict[str, list[str]] = {field: [] for field in _FIELDS}
    if not isinstance(csp, Mapping):
        return lists
    for field in _FIELDS:
        given = csp.get(field)
        if given is None:
            continue
        if not isinstance(given, (list, tuple)):
            raise CspError(f"_meta.ui.csp.{field} must be a list of origins")
        for source in given:
            if not is_origin(source):
                raise CspError(f"_meta.ui.csp.{field}: {source!r} is not an origin "
                               "(scheme://host[:port])")
            lists[field].append(str(source).rstrip("/"))
    return lists


def policy(csp: Any) -> str:
    """The policy for a view whose resource declared ``csp`` (``_meta.ui.csp``, or None)."""
    d = declared(csp)
    res = " ".join(d["resourceDomains"])

    def with_(base: str, extra: str) -> str:
        return f"{base} {extra}".strip()

    directives = [
        "default-src 'none'",
        with_("script-src 'self' 'unsafe-inline'", res),
        with_("style-src 'self' 'unsafe-inline'", res),
        with_("img-src 'self' data:", res),
        with_("font-src 'self'", res),
        with_("media-src 'self' data:", res),
        "connect-src " + (" ".join(d["connectDomains"]) or "'none'"),
        "frame-src " + (" ".join(d["frameDomains"]) or "'none'"),
        "object-src 'none'",
        "base-uri " + (" ".join(d["baseUriDomains"]) or "'self'"),
    ]
    return "; ".join(directives)


def allow_attribute(permissions: Any) -> str:
    """The iframe ``allow`` attribute for the declared ``_meta.ui.permissions``."""
    if not isinstance(permissions, Mapping):
        return ""
    return "; ".join(feature for key, feature in _FEATURES.items()
                     if isinstance(permissions.get(key), Mapping))


def with_policy(html: str, csp_policy: str) -> str:
    """``html`` with a ``<meta http-equiv="Content-Security-Policy">`` in front of all its
    content (after a doctype), so the policy covers every script and style of the document
    even where no header can be set (a ``srcdoc`` view in a notebook). The parser moves
    the element into an implied ``<head>``, where a policy ``<meta>`` counts."""
    meta = ('<meta http-equiv="Content-Security-Policy" content="'
            + csp_policy.replace("&", "&amp;").replace('"', "&quot;") + '">')
    match = re.match(r"\s*<!doctype[^>]*>", html, re.IGNORECASE)
    if match:
        return html[:match.end()] + meta + html[match.end():]
    return meta + html


__all__ = ["CspError", "allow_attribute", "declared", "policy", "with_policy"]
