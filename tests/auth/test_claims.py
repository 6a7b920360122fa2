"""``exp``, ``nbf`` and ``iat`` mean one thing to both verifiers (issue 25, #8): the same
token claims, as a JWT or as an introspection answer, are accepted or refused alike, with
the same ``leeway``. The introspection verifier used to check ``exp`` only, so a token not
valid yet (``nbf`` an hour ahead) or issued in the future was accepted."""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from mcpsync import IntrospectionVerifier, JwtVerifier
from tests.helpers import require_module

from .authserver import AuthServer, Issued

require_module("jwt")

AUDIENCE = "https://rs.example/mcp"
LEEWAY = 60
HOUR = 3600

# (case, the time claims relative to now -- None leaves the claim out, a str is sent as
# it is -- and whether the token is accepted)
CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("valid", {"exp": HOUR, "nbf": -10, "iat": -10}, True),
    ("exp_past", {"exp": -HOUR}, False),
    ("exp_within_leeway", {"exp": -LEEWAY // 2}, True),
    ("exp_just_past_leeway", {"exp": -LEEWAY - 5}, False),
    ("nbf_future", {"nbf": HOUR}, False),
    ("nbf_within_leeway", {"nbf": LEEWAY // 2}, True),
    ("iat_future", {"iat": HOUR}, False),
    ("iat_within_leeway", {"iat": LEEWAY // 2}, True),
    ("nbf_not_a_number", {"nbf": "soon"}, False),
    ("iat_not_a_number", {"iat": "now"}, False),
    ("exp_not_a_number", {"exp": "later"}, False),
]


def _claims(relative: dict[str, Any]) -> dict[str, Any]:
    now = int(time.time())
    out: dict[str, Any] = {"exp": now + HOUR, "iat": now}
    for name, value in relative.items():
        out[name] = value if not isinstance(value, int) else now + value
    return out


@pytest.mark.parametrize("case, relative, accepted", CASES, ids=[c[0] for c in CASES])
def test_jwt_time_claims(jwt_auth: AuthServer, case: str, relative: dict[str, Any],
                         accepted: bool) -> None:
    verifier = JwtVerifier(jwt_auth.jwks_url, issuer=jwt_auth.issuer, audience=AUDIENCE,
                           leeway=LEEWAY)
    token = jwt_auth.mint(audience=AUDIENCE, **_claims(relative))
    assert (verifier.verify(token) is not None) is accepted


@pytest.mark.parametrize("case, relative, accepted", CASES, ids=[c[0] for c in CASES])
def test_introspection_time_claims(auth_server: AuthServer, case: str,
                                   relative: dict[str, Any], accepted: bool) -> None:
    auth_server.clients["the-resource"] = "its-secret"
    verifier = IntrospectionVerifier(auth_server.issuer + "/introspect",
                                     client_id="the-resource", client_secret="its-secret",
                                     leeway=LEEWAY)
    token = "at-" + secrets.token_urlsafe(16)
    auth_server.tokens[token] = Issued("c1", [], AUDIENCE, auth_server.issuer)
    auth_server.introspection_claims = _claims(relative)
    assert (verifier.verify(token) is not None) is accepted


def test_introspection_may_leave_out_every_time_claim(auth_server: AuthServer) -> None:
    # RFC 7662 makes exp optional (a JWT access token must carry it).
    auth_server.clients["the-resource"] = "its-secret"
    verifier = IntrospectionVerifier(auth_server.issuer + "/introspect",
                                     client_id="the-resource", client_secret="its-secret")
    token = "at-" + secrets.token_urlsafe(16)
    auth_server.tokens[token] = Issued("c1", [], AUDIENCE, auth_server.issuer)
    assert verifier.verify(token) is not None
    from mcpsync.auth.server.claims import time_claims_refusal

    assert time_claims_refusal({}, LEEWAY, require_exp=True) == "it has no exp"


def test_a_boolean_is_not_a_time() -> None:
    from mcpsync.auth.server.claims import time_claims_refusal

    now = time.time()
    assert time_claims_refusal({"exp": True}, 0, require_exp=True, now=now) is not None
    assert time_claims_refusal({"exp": now + 10, "nbf": False}, 0, require_exp=True,
                               now=now) is not None
    assert time_claims_refusal({"exp": now + 10.5}, 0, require_exp=True, now=now) is None
