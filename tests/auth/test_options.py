"""``OAuthLimits``: the bounds of ``OAuth`` and of its classmethod constructors, given as
one option object (the flat keywords it replaced are gone: mcpsync is 0.x)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from mcpsync import OAuth, OAuthLimits


def bounds(oauth: OAuth) -> tuple[Any, ...]:
    """What the limits set, as the flows read them."""
    return (oauth._fetcher.timeout, oauth._fetcher.max_bytes, oauth.max_reauthorizations,
            oauth.flight_timeout, oauth.limits)


CONSTRUCTORS: list[tuple[str, dict[str, Any]]] = [
    ("client_credentials", {"client_id": "svc", "client_secret": "s"}),
    ("jwt_bearer", {"assertion": "a.b.c"}),
    ("enterprise", {"id_token": "t", "idp_token_endpoint": "https://idp.example/token",
                    "idp_client_id": "i", "client_id": "c"}),
]
LIMITS = OAuthLimits(fetch_timeout=2.0, max_response_bytes=2048, max_reauthorizations=2,
                     flight_timeout=30.0)


def test_oauth_reads_its_limits():
    assert bounds(OAuth(limits=LIMITS)) == (2.0, 2048, 2, 30.0, LIMITS)
    assert bounds(OAuth(limits=OAuthLimits())) == bounds(OAuth())
    assert bounds(OAuth())[:4] == (10.0, 256 * 1024, 3, 600.0)


@pytest.mark.parametrize(("name", "given"), CONSTRUCTORS, ids=[c[0] for c in CONSTRUCTORS])
def test_the_classmethod_constructors_read_their_limits(name, given):
    make = getattr(OAuth, name)
    assert bounds(make(**given, limits=LIMITS)) == (2.0, 2048, 2, 30.0, LIMITS)
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeout'"):
        make(**given, timeout=1.0)  # the flat spelling is gone


@pytest.mark.parametrize("old", ["timeout", "max_response_bytes", "max_reauthorizations",
                                 "flight_timeout", "scope"])
def test_a_flat_keyword_is_a_type_error(old):
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{old}'"):
        OAuth(**{old: 1})


def test_oauth_stays_within_a_dozen_parameters():
    named = [p for p in inspect.signature(OAuth.__init__).parameters.values()
             if p.kind is not p.VAR_KEYWORD and p.name != "self"]
    assert len(named) <= 13, [p.name for p in named]
