"""TransportContext: what a handler and middleware may change (auth, user) and may not."""

from __future__ import annotations

import pytest

from mcpsync.dispatch.inbound import Headers, TransportContext


def test_the_transport_fields_are_read_only_and_auth_and_user_settable():
    ctx = TransportContext("http", headers={"X-Trace": "1"}, remote_addr="10.0.0.1",
                           session_id="s", can_receive_requests=True)
    for name, value in (("kind", "stdio"), ("headers", Headers()), ("remote_addr", "x"),
                        ("session_id", "t"), ("can_receive_requests", False)):
        with pytest.raises(AttributeError, match=f"TransportContext.{name} is read-only"):
            setattr(ctx, name, value)
    with pytest.raises(AttributeError):
        del ctx.auth
    with pytest.raises(AttributeError):
        ctx.other = 1  # type: ignore[attr-defined]
    ctx.auth, ctx.user = "token", "alice"
    assert (ctx.kind, ctx.headers["x-trace"], ctx.remote_addr, ctx.session_id,
            ctx.can_receive_requests, ctx.auth, ctx.user) == (
        "http", "1", "10.0.0.1", "s", True, "token", "alice")


def test_a_context_for_a_session_or_a_message_is_a_new_one():
    ctx = TransportContext("http", headers={"a": "b"}, can_receive_requests=False)
    ctx.auth = "token"
    session = ctx.for_session("abc")
    assert (session.session_id, session.can_receive_requests, session.auth) == (
        "abc", True, "token")
    session.user = "bob"
    assert ctx.user is None
