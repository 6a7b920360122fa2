"""What the HTTP client makes of a POST's answer that is not an SSE stream: a JSON answer,
a refusal (an HTTP status, maybe with a JSON-RPC error body), and the ``initialize`` that
replaces an expired session.

A part of :class:`~mcpsync.transports.http.transport.HttpTransport` (a mixin, as
:class:`~mcpsync.transports.http.streams.SseStreams` is: the attributes and methods declared
below are the transport's), kept apart so that the transport's module holds the exchange of
a call and this one what the server said.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import requests

from ...errors import TransportError
from ...protocol import jsonrpc
from ...protocol.deadline import Deadline
from ...protocol.http_headers import SESSION_ID
from ...protocol.jsonrpc import (
    ErrorResponse,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from ...protocol.redact import redact
from ...protocol.sse import SseParser
from .calls import CallExchanges
from .deadline import timeouts
from .io import STREAM_ERRORS, chunks, read_body, read_some
from .state import LEGACY_SSE, NewSession, SessionState, Snapshot

logger = logging.getLogger("mcpsync.http.client")

ACCEPT: Final = "application/json, text/event-stream"
ACK_TIMEOUT: Final = 30.0  # seconds for the 202 to a posted notification or response
#: The JSON-RPC errors a 2026-07-28 server refuses ``initialize`` with (it is no
#: 2024-11-05 server, whatever the status).
MODERN_CODES: Final = frozenset({-32020, -32021, -32022, -32601, -32602})
#: The statuses that may be an authorization refusal (the table is
#: :data:`mcpsync.auth.errors.REFUSALS`, not imported until one is met).
AUTH_STATUSES: Final = frozenset({401, 403})


class Answers:
    """See the module docstring."""

    max_message_bytes: int
    _http: requests.Session
    _headers: dict[str, str]
    _connect_timeout: float
    _read_timeout: float
    _state: SessionState
    _post_url: str
    _init_request: Request | None
    _exchanges: CallExchanges

    if TYPE_CHECKING:
        def _feed(self, message: Message) -> None: ...
        def _fail(self, request_id: RequestId, text: str, code: int = ...,
                  data: Any = None) -> None: ...
        def _fail_local(self, request_id: RequestId, error: TransportError) -> None: ...
        def _try_legacy_sse(self, request: Request) -> bool: ...
        def _parser(self) -> SseParser: ...
        def _headers_for(self, message: Message, snap: Snapshot) -> dict[str, str]: ...

    def _refused(self, request: Request, response: requests.Response) -> bool:
        """An HTTP error: the server's JSON-RPC error if it sent one, else its status.
        True when the server turned out to be a 2024-11-05 one (the answer is to come)."""
        status = response.status_code
        text = read_some(response)
        error: Any = None
        try:
            body = jsonrpc.loads(text)
            error = body.get("error") if isinstance(body, dict) else None
        except ValueError:  # not JSON, or nested too deep
            pass
        if (request.method == "initialize" and status in (400, 404, 405)
                and not (isinstance(error, dict) and error.get("code") in MODERN_CODES)
                and self._state.era != LEGACY_SSE and self._try_legacy_sse(request)):
            return True
        if status in AUTH_STATUSES and self._refused_auth(request, response, status, error,
                                                          text):
            return False
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            self._fail(request.id, str(error.get("message", f"HTTP {status}")), error["code"],
                       error.get("data"))
            return False
        # No JSON-RPC error in the body (a gateway's page): the status, for a retry policy
        # to tell a balancer whose upstream is restarting (502-504) from a refusal.
        self._fail(request.id, redact(f"HTTP {status} from {self._post_url}: {text[:200]}"),
                   data={"httpStatus": status})
        return False

    def _refused_auth(self, request: Request, response: requests.Response, status: int,
                      error: Any, text: str) -> bool:
        """A 401, or a 403 ``insufficient_scope``: the call fails with the
        :class:`~mcpsync.auth.AuthorizationError` that
        :func:`~mcpsync.auth.errors.http_refusal` gives the status (with the scopes the
        challenge names), not a bare JSON-RPC error. False for another 403."""
        # Imported here: the auth package is heavy, and a refusal is rare.
        from ...auth.errors import http_refusal

        error = error if isinstance(error, dict) else {}
        code = error.get("code") if isinstance(error.get("code"), int) else None
        said = error.get("message")
        said = said if isinstance(said, str) else text[:200]  # a gateway's own body
        message = redact(f"HTTP {status} from {self._post_url}" + (f": {said}" if said else ""))
        refusal = http_refusal(status, response.headers.get("WWW-Authenticate"), message,
                               code=code, data=error.get("data"))
        if refusal is None:
            return False
        self._fail_local(request.id, refusal)
        return True

    def _feed_json(self, body: bytes, request: Request) -> None:
        answered = False
        reasons: list[str] = []
        for item in jsonrpc.decode(body):
            if isinstance(item, Invalid):
                reasons.append(item.reason)
                continue
            if isinstance(item, (Response, ErrorResponse)) and item.id == request.id:
                answered = True
            self._feed(item)
        if not answered:
            why = f": {reasons[0][:200]}" if reasons else ""
            self._fail_local(request.id, TransportError(
                f"the server's JSON answer to {request.method} is no answer to it{why}"))

    def _new_session(self) -> NewSession:
        """Initialize a new session like the first one (run by one thread at a time): an
        exchange of its own, which the call that leads it giving up does not end."""
        init = self._init_request
        assert init is not None
        probe = Request(f"mcpsync-reinit-{id(self)}", "initialize", init.params)
        headers = {**self._headers, "Content-Type": "application/json", "Accept": ACCEPT}
        deadline = Deadline(self._connect_timeout + self._read_timeout + ACK_TIMEOUT,
                            "re-initializing the HTTP session")
        try:
            with self._exchanges.running(object(), deadline):
                outcome = self._initialize(probe, headers, deadline)
        except (*STREAM_ERRORS, TransportError) as exc:
            logger.warning("re-initializing the expired session failed: %s", exc)
            return None
        if outcome is not None:
            logger.info("the HTTP session expired; re-initialized as a new session")
        return outcome

    def _initialize(self, probe: Request, headers: dict[str, str],
                    deadline: Deadline) -> NewSession:
        with self._http.post(self._post_url, data=jsonrpc.encode(probe), headers=headers,
                             stream=True, timeout=timeouts(
                                 deadline, self._connect_timeout, self._read_timeout)
                             ) as response:
            if response.status_code != 200:
                return None
            session_id = response.headers.get(SESSION_ID)
            body = self._first_message(response)
        if not isinstance(body, Response):
            return None
        version = body.result.get("protocolVersion")
        version = version if isinstance(version, str) else None
        fresh = Snapshot(self._state.era, session_id, version, -1)
        initialized = Notification("notifications/initialized")
        self._http.post(self._post_url, data=jsonrpc.encode(initialized),
                        headers=self._headers_for(initialized, fresh), stream=True,
                        timeout=timeouts(deadline, self._connect_timeout, ACK_TIMEOUT)
                        ).close()
        return session_id, version

    def _first_message(self, response: requests.Response) -> Message | None:
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            parser = self._parser()
            for chunk in chunks(response):
                for event in parser.feed(chunk):
                    if event.data.strip():
                        items = jsonrpc.decode(event.data)
                        return items[0] if items and not isinstance(items[0], Invalid) else None
            return None
        items = jsonrpc.decode(read_body(response, self.max_message_bytes))
        return items[0] if items and not isinstance(items[0], Invalid) else None
