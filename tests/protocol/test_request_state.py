"""Property tests of the signed MRTR ``requestState`` (mcpsync.protocol.request_state)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsync.protocol.request_state import InvalidRequestState, RequestState, seal, unseal

KEY = b"k" * 32
NOW = 1_800_000_000.0

json_leaf = st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=20)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=8), inner, max_size=4), max_leaves=12)
params_st = st.dictionaries(st.text(max_size=8).filter(
    lambda k: k not in ("_meta", "inputResponses", "requestState")), json_value, max_size=4)
methods = st.sampled_from(["tools/call", "prompts/get", "resources/read"])
answers_st = st.dictionaries(st.text(min_size=1, max_size=6), st.fixed_dictionaries(
    {"method": st.sampled_from(["elicitation/create", "sampling/createMessage"]),
     "result": st.dictionaries(st.text(max_size=6), json_value, max_size=3)}), max_size=3)
asked_st = st.dictionaries(st.text(min_size=1, max_size=6), st.sampled_from(
    ["elicitation/create", "sampling/createMessage", "roots/list"]), max_size=3)


@settings(max_examples=150, deadline=None)
@given(methods, params_st, answers_st, asked_st, st.floats(1, 10_000))
def test_round_trip(method, params, answers, asked, ttl):
    state = seal(KEY, method, params, answers, asked, NOW + ttl)
    # _meta and the MRTR fields are not part of what the state is bound to.
    retry = {**params, "_meta": {"x": 1}, "inputResponses": {}, "requestState": state}
    assert unseal(KEY, state, method, retry, NOW) == RequestState(answers, asked)


@settings(max_examples=150, deadline=None)
@given(methods, params_st, answers_st, asked_st, st.data())
def test_any_changed_character_is_refused(method, params, answers, asked, data):
    state = seal(KEY, method, params, answers, asked, NOW + 60)
    index = data.draw(st.integers(0, len(state) - 1))
    replacement = data.draw(st.sampled_from(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=é"))
    tampered = state[:index] + replacement + state[index + 1:]
    if tampered == state:
        return
    with pytest.raises(InvalidRequestState):
        unseal(KEY, tampered, method, params, NOW)


@settings(max_examples=100, deadline=None)
@given(methods, methods, params_st, params_st, answers_st)
def test_bound_to_method_and_params(method, other_method, params, other_params, answers):
    state = seal(KEY, method, params, answers, {"q0": "roots/list"}, NOW + 60)
    if (method, params) == (other_method, other_params):
        return
    with pytest.raises(InvalidRequestState, match="different request"):
        unseal(KEY, state, other_method, other_params, NOW)


@given(params_st, st.floats(0.001, 1e6))
def test_expired_states_are_refused(params, late):
    state = seal(KEY, "tools/call", params, {}, {}, NOW)
    assert unseal(KEY, state, "tools/call", params, NOW) == RequestState()
    with pytest.raises(InvalidRequestState, match="expired"):
        unseal(KEY, state, "tools/call", params, NOW + late)


@given(params_st)
def test_another_key_is_refused(params):
    state = seal(KEY, "tools/call", params, {}, {}, NOW + 60)
    with pytest.raises(InvalidRequestState, match="verification"):
        unseal(b"another key", state, "tools/call", params, NOW)


@settings(max_examples=300)
@given(json_value | st.text(max_size=60))
def test_arbitrary_input_only_ever_raises_invalid_request_state(junk):
    with pytest.raises(InvalidRequestState):
        unseal(KEY, junk, "tools/call", {}, NOW)


def test_a_validly_signed_payload_of_the_wrong_shape_is_refused():
    # Only a key holder can make these, but the reader must still not crash or trust them.
    import base64
    import hashlib
    import hmac

    def sign(payload: bytes) -> str:
        mac = hmac.new(KEY, payload, hashlib.sha256).digest()
        enc = base64.urlsafe_b64encode
        return f"{enc(payload).rstrip(b'=').decode()}.{enc(mac).rstrip(b'=').decode()}"

    for payload in (b"not json", b"[1,2]", b'"s"'):
        with pytest.raises(InvalidRequestState, match="malformed"):
            unseal(KEY, sign(payload), "tools/call", {}, NOW)


def test_lone_surrogates_in_params_and_answers_round_trip():
    # JSON may carry "\ud800"; it used to fail seal/params_digest with UnicodeEncodeError,
    # which reached the client as -32603 with a logged traceback.
    params = {"name": "echo", "arguments": {"text": "a\ud800b"}}
    answers = {"q\udfff": {"method": "elicitation/create", "result": {"v": "\udc00"}}}
    asked = {"q\udfff": "elicitation/create"}
    state = seal(KEY, "tools/call", params, answers, asked, NOW + 60)
    assert unseal(KEY, state, "tools/call", params, NOW) == RequestState(answers, asked)
