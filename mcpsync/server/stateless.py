"""The 2026-07-28 ("modern") era on the server: each request carries its own envelope.

A request whose ``params._meta`` names ``io.modelcontextprotocol/protocolVersion`` is served
statelessly: its version, client capabilities and log level come from that request alone,
never from earlier ones. Every result carries ``resultType`` and ``serverInfo``; cacheable
results carry ``ttlMs``/``cacheScope``. The same registered handlers serve both eras.

Reverse requests become multi round-trip requests (SEP-2322): in ``tools/call``,
``prompts/get`` and ``resources/read`` a handler's ``ctx.elicit``/``ctx.sample``/
``ctx.list_roots`` (anything that goes through ``ctx.request``) ends the attempt with an
``InputRequiredResult``; the client's retry runs the handler again from the start, and the
same call now returns the answer. Answers of earlier rounds travel in a signed
``requestState`` (:mod:`mcpsync.protocol.request_state`). Code before a question runs
again on every round: keep it free of side effects, or do them after the last question.

``subscriptions/listen`` is an ordinary method handler (:mod:`mcpsync.server.listen`) that
stays open and sends tagged notifications through the same scope.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final, Protocol

from ..dispatch import ports
from ..dispatch.context import HandlerContext
from ..dispatch.outbound import OutboundChannel
from ..dispatch.ports import MRTR_METHODS, SessionInfo
from ..dispatch.questions import INPUT_REQUEST_METHODS, InputRequired
from ..engine.requests import InboundRequest
from ..errors import (
    MethodNotFoundError,
    ProtocolStateError,
)
from ..protocol import levels
from ..protocol.envelope import Envelope, check_envelope
from ..protocol.jsonrpc import RequestId
from ..protocol.methods import VIEWS
from ..protocol.request_state import seal
from ..protocol.versions import META_SERVER_INFO
from .dispatcher import Dispatcher
from .host import RequestServer


class StatelessHost(Protocol):
    """What a stateless request is served in: a ``ServerSession`` (stdio, memory, a
    handshake-era HTTP session), or a 2026-07-28 HTTP request's own stream and channel."""

    @property
    def server(self) -> RequestServer: ...

    @property
    def connection(self) -> OutboundChannel: ...

    @property
    def ended(self) -> threading.Event: ...


#: Methods that exist only in the handshake era (answered -32601 here).
REMOVED_METHODS: Final = VIEWS.removed_modern
#: Results that carry caching hints.
CACHEABLE_METHODS: Final = VIEWS.cacheable


class _Rounds:
    """The questions of one attempt, numbered in the order the handler asks them.

    ``answers`` maps a question's key to ``{"method", "result"}``: only answers to questions
    this server asked (see :func:`_answers`)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self._keys: ports.QuestionKeys | None = None  # made by the first question
        self._thread = threading.get_ident()

    def ask(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        if threading.get_ident() != self._thread:
            # Only the handler's own thread can end the attempt with a question.
            raise ProtocolStateError(
                f"cannot ask {method} from another thread under 2026-07-28: ask from the "
                "handler's own thread")
        keys = self._keys
        if keys is None:  # only this thread asks: no race to make it
            keys = self._keys = ports.QuestionKeys()
        key = keys.next()
        entry = self.answers.get(key)
        # An answer counts only for the question it was given to: a handler that asks
        # something else at this point on a later run asks it afresh.
        if isinstance(entry, dict) and entry.get("method") == method and isinstance(
                entry.get("result"), dict):
            return dict(entry["result"])
        request: dict[str, Any] = {"method": method}
        if params is not None:
            request["params"] = params
        raise InputRequired({key: request})


class _NoReverseRequests:
    """The connection as a stateless handler sees it: notifications, and requests only as
    multi round-trip questions (where the method allows them)."""

    def __init__(self, connection: OutboundChannel, rounds: _Rounds | None) -> None:
        self._connection = connection
        self._rounds = rounds

    def notify(self, method: str, params: dict[str, Any] | None = None, *,
               related_request_id: RequestId | None = None) -> None:
        self._connection.notify(method, params, related_request_id=related_request_id)

    def request(self, method: str, params: dict[str, Any] | None = None,
                **options: Any) -> dict[str, Any]:
        if self._rounds is None or options.get("parent") is None:  # detached: no request
            raise ProtocolStateError(
                f"cannot send {method}: in 2026-07-28 a server sends no requests, and only "
                "tools/call, prompts/get and resources/read may ask the client for input")
        if method not in INPUT_REQUEST_METHODS:
            raise ProtocolStateError(f"cannot ask {method} in 2026-07-28: an input request is "
                                     "one of " + ", ".join(INPUT_REQUEST_METHODS))
        return self._rounds.ask(method, params)


class RequestScope:
    """The SessionHandle of one stateless request."""

    def __init__(self, session: StatelessHost, info: SessionInfo, log_level: str | None,
                 rounds: _Rounds | None = None):
        self._session = session
        self._info = info
        self._log_level = log_level
        self._rounds = rounds
        self._connection: _NoReverseRequests | None = None  # made when a handler sends

    @property
    def server(self) -> RequestServer:
        return self._session.server

    @property
    def info(self) -> SessionInfo:
        return self._info

    @property
    def connection(self) -> OutboundChannel:
        connection = self._connection
        if connection is None:  # a racing thread makes an equal one: either will do
            connection = self._connection = _NoReverseRequests(self._session.connection,
                                                               self._rounds)
        return connection

    @property
    def ended(self) -> threading.Event:
        return self._session.ended

    def log_enabled(self, level: str) -> bool:
        # Without a logLevel in its _meta, a request gets no log messages at all.
        return self._log_level is not None and levels.at_least(level, self._log_level)


def serve(session: StatelessHost, dispatcher: Dispatcher, inbound: InboundRequest,
          envelope: Envelope | None = None) -> dict[str, Any]:
    """Run the handler and decorate the result. ``dispatcher``: the server's, which the
    request is answered through. ``envelope``: the request's, checked where it came in
    (HTTP); ``None``: check it here (stdio, memory), once either way."""
    server = session.server
    params = inbound.params
    method = inbound.method
    if envelope is None:
        envelope = check_envelope(method, params, server.protocol.modern_versions)
    version = envelope.version
    log_level = envelope.log_level
    if method in REMOVED_METHODS:
        raise MethodNotFoundError(f"Method not found: {method} does not exist in {version}",
                                  data={"method": method})
    # (protocol_version, client_info, client_capabilities): by position, half the cost of
    # the keywords in a dataclass's __init__, once per request.
    info = SessionInfo(version, envelope.client_info, envelope.capabilities)
    handler = dispatcher.handler(method)
    if handler is None:
        raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
    rounds = None
    if method in MRTR_METHODS:
        # A first attempt (no requestState, no inputResponses: nothing was asked yet, so
        # nothing counts as an answer) skips the key and the unsealing.
        retry = "requestState" in params or "inputResponses" in params
        rounds = _Rounds(ports.retry_answers(dispatcher.state_key, method, params)
                         if retry else {})
    ctx = HandlerContext(inbound, RequestScope(session, info, log_level, rounds))
    try:
        result = dict(dispatcher.run_handler(handler, ctx, params))
    except InputRequired as question:
        assert rounds is not None
        asked = {key: str(request.get("method"))
                 for key, request in question.requests.items()}
        state = seal(dispatcher.state_key, method, params, rounds.answers, asked,
                     time.time() + server.limits.request_state_ttl,
                     principal=ports.request_principal())
        return {"resultType": "input_required", "inputRequests": question.requests,
                "requestState": state,
                "_meta": {META_SERVER_INFO: dispatcher.info_for(version)}}
    # An extension's own result says its resultType (one it declared); all else is complete.
    kind = result.get("resultType")
    result["resultType"] = kind if kind in dispatcher.extensions.result_types else "complete"
    result_meta = dict(result.get("_meta") or {})
    result_meta[META_SERVER_INFO] = dispatcher.info_for(version)
    result["_meta"] = result_meta
    if method in CACHEABLE_METHODS and "inputResponses" not in params:
        result.setdefault("ttlMs", server.protocol.cache_ttl_ms)
        result.setdefault("cacheScope", server.protocol.cache_scope)
    return result


def verified_answers(server: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The answers a 2026-07-28 retry carries, by question key (see
    :func:`mcpsync.dispatch.ports.verified_answers`), for ``server``'s key (a
    ``Server``: a handler's ``ctx.server``, untyped as it is)."""
    return ports.verified_answers(server._dispatcher.state_key, method, params)
