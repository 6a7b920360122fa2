"""``OAuthLimits`` and the flat keywords it replaced on ``OAuth`` and its classmethod
constructors: each old keyword still works, warns with the new spelling, and makes the
same object as the new spelling."""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import pytest

from mcpsync import OAuth, OAuthLimits


def bounds(oauth: OAuth) -> tuple[Any, ...]:
    """What the limits set, as the flows read them."""
    return (oauth._fetcher.timeout, oauth._fetcher.max_bytes, oauth.max_reauthorizations,
            oauth.flight_timeout, oauth.limits)


MOVED = [("timeout", 1.5), ("max_response_bytes", 1024), ("max_reauthorizations", 1),
         ("flight_timeout", 30.0)]


@pytest.mark.parametrize(("old", "value"), MOVED, ids=[old for old, _ in MOVED])
def test_an_old_keyword_of_oauth_warns_and_makes_the_same_object(old, value):
    with pytest.warns(DeprecationWarning, match=rf"OAuth\({old}=\.\.\.\) is deprecated: "
                      rf"pass OAuth\(limits=OAuthLimits\({old}=\.\.\.\)\)") as caught:
        flat = OAuth(**{old: value})
    assert caught[0].filename == __file__
    assert bounds(flat) == bounds(OAuth(limits=OAuthLimits(**{old: value}))) != bounds(OAuth())


CONSTRUCTORS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("client_credentials", {"client_id": "svc", "client_secret": "s"},
     ["timeout", "max_response_bytes", "max_reauthorizations"]),
    ("jwt_bearer", {"assertion": "a.b.c"}, ["timeout", "max_response_bytes"]),
    ("enterprise", {"id_token": "t", "idp_token_endpoint": "https://idp.example/token",
                    "idp_client_id": "i", "client_id": "c"}, ["timeout", "max_response_bytes"]),
]


@pytest.mark.parametrize(("name", "given", "moved"), CONSTRUCTORS,
                         ids=[c[0] for c in CONSTRUCTORS])
def test_the_classmethod_constructors_take_limits_and_their_old_keywords(name, given, moved):
    make = getattr(OAuth, name)
    values = {"timeout": 2.0, "max_response_bytes": 2048, "max_reauthorizations": 2}
    for old in moved:
        with pytest.warns(DeprecationWarning, match=rf"OAuth\.{name}\({old}=\.\.\.\)"):
            flat = make(**given, **{old: values[old]})
        grouped = make(**given, limits=OAuthLimits(**{old: values[old]}))
        assert bounds(flat) == bounds(grouped) != bounds(make(**given))
    with pytest.raises(TypeError, match="unexpected keyword argument 'flight_timeout'"):
        make(**given, flight_timeout=1.0)  # never one of theirs


def test_the_new_spelling_does_not_warn_and_the_defaults_are_the_old_ones():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bounds(OAuth(limits=OAuthLimits())) == bounds(OAuth())
    assert bounds(OAuth())[:4] == (10.0, 256 * 1024, 3, 600.0)


def test_an_unknown_keyword_is_still_a_type_error():
    with pytest.raises(TypeError, match="OAuth\\(\\) got an unexpected keyword argument 'scope'"):
        OAuth(scope=["a"])


def test_oauth_stays_within_a_dozen_parameters():
    named = [p for p in inspect.signature(OAuth.__init__).parameters.values()
             if p.kind is not p.VAR_KEYWORD and p.name != "self"]
    assert len(named) <= 13, [p.name for p in named]
