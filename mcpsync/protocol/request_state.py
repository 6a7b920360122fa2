"""Signed ``requestState`` for multi round-trip requests (SEP-2322), sans-IO.

The state a server hands a client in an ``InputRequiredResult`` comes back verbatim on the
retry; the client is untrusted, so the state is integrity-protected. It is
``base64url(payload) "." base64url(HMAC-SHA256(key, payload))`` where the payload binds
the method, a digest of the request's parameters (so it cannot be replayed for other
arguments), an expiry, the answers gathered in earlier rounds, and the questions this round
asked (key -> method), and who it was issued to (``principal``: an opaque key of the
authenticated caller, ``""`` for none), so another principal cannot replay it. Only the
state says which questions are open: a retry's ``inputResponses`` counts for those keys
alone, so a client can not skip a question by answering it before it is asked, nor rewrite
an answer of an earlier round. Time is passed in, so this module stays free of clocks.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_IGNORED_PARAMS = frozenset({"_meta", "inputResponses", "requestState"})


class InvalidRequestState(ValueError):
    """The state was tampered with, expired, or belongs to another request."""


@dataclass(frozen=True)
class RequestState:
    """What a verified state says: the answers so far (key -> ``{"method", "result"}``) and
    the questions still open (key -> method)."""

    answers: dict[str, Any] = field(default_factory=dict)
    asked: dict[str, str] = field(default_factory=dict)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def params_digest(method: str, params: dict[str, Any]) -> str:
    """A digest of what the request asks for (``_meta`` and MRTR fields left out)."""
    core = {k: v for k, v in params.items() if k not in _IGNORED_PARAMS}
    blob = json.dumps([method, core], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass: params may hold a lone surrogate (JSON allows "\ud800"); it must
    # digest like any other text, not fail the request with an internal error.
    import hashlib  # (here and below: OpenSSL is loaded by the first MRTR, not at start-up)

    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def seal(key: bytes, method: str, params: dict[str, Any], answers: Mapping[str, Any],
         asked: Mapping[str, str], expires_at: float, principal: str = "") -> str:
    """Sign the answers gathered so far for this request and the questions now asked."""
    payload = json.dumps({"m": method, "d": params_digest(method, params), "x": expires_at,
                          "a": dict(answers), "q": dict(asked), "p": principal},
                         separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    import hashlib
    import hmac

    mac = hmac.new(key, payload, hashlib.sha256).digest()
    return f"{_b64(payload)}.{_b64(mac)}"


def unseal(key: bytes, state: Any, method: str, params: dict[str, Any],
           now: float, principal: str = "") -> RequestState:
    """What a state carries; :class:`InvalidRequestState` unless it is ours, for this very
    request (method and params), and fresh."""
    if not isinstance(state, str) or state.count(".") != 1:
        raise InvalidRequestState("requestState is malformed")
    body, mac_text = state.split(".")
    try:
        payload, mac = _unb64(body), _unb64(mac_text)
    except (ValueError, UnicodeError):
        raise InvalidRequestState("requestState is malformed") from None
    if _b64(payload) != body or _b64(mac) != mac_text:
        # Only the canonical spelling is ours: the unused bits of a last base64 character
        # would otherwise let one state be written several ways.
        raise InvalidRequestState("requestState is malformed")
    import hashlib
    import hmac

    if not hmac.compare_digest(mac, hmac.new(key, payload, hashlib.sha256).digest()):
        raise InvalidRequestState("requestState failed verification")
    try:
        data = json.loads(payload.decode("utf-8", "surrogatepass"))
    except ValueError:  # only a holder of the key could get here
        raise InvalidRequestState("requestState is malformed") from None
    if not isinstance(data, dict):
        raise InvalidRequestState("requestState is malformed")
    if data.get("m") != method or data.get("d") != params_digest(method, params):
        raise InvalidRequestState("requestState belongs to a different request")
    if data.get("p", "") != principal:
        raise InvalidRequestState("requestState belongs to another caller")
    if not isinstance(data.get("x"), (int, float)) or now > data["x"]:
        raise InvalidRequestState("requestState has expired")
    answers, asked = data.get("a"), data.get("q")
    if not isinstance(answers, dict) or not isinstance(asked, dict) or not all(
            isinstance(v, str) for v in asked.values()):
        raise InvalidRequestState("requestState is malformed")
    return RequestState(answers, asked)
