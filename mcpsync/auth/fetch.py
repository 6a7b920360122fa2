"""Bounded HTTP for the auth code: every fetch ends by a deadline and has a size bound.

Metadata documents, registration, token, introspection and JWKS answers come from servers
the code does not trust yet, so each body is read in chunks and abandoned past
``max_bytes`` (never loaded whole first), and each fetch ends by a
:class:`~mcpsync.protocol.deadline.Deadline`: connecting, the answer's head and its whole
body, within ``timeout`` seconds in all. A per-read timeout alone would not do: a server
sending one byte every half second never trips it. The :class:`Fetcher`'s own session
mounts :class:`~mcpsync.transports.http.deadline.DeadlineAdapter`, so a trickle is cut at
the deadline (its socket shut down) and the fetch raises
:class:`~mcpsync.protocol.deadline.DeadlineExceeded`, one of :data:`FETCH_ERRORS`.

A caller whose several fetches are one operation (the discovery walk over several
well-known URLs) passes one deadline to each; a fetch then ends by that deadline or by its
own ``timeout``, whichever comes first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import requests

from ..errors import MessageTooLargeError
from ..protocol import jsonrpc
from ..protocol.deadline import Deadline
from ..transports.http.deadline import exchange, timeouts, tracked_session
from ..transports.http.io import local_error, read_body

#: Seconds for one authorization-related fetch, all of it (connect, head, body).
DEFAULT_TIMEOUT: Final = 10.0
#: The largest metadata, registration or token answer read (bytes).
DEFAULT_MAX_BYTES: Final = 256 * 1024


@dataclass(frozen=True)
class Answer:
    """A status and, when the body was a JSON object, that object (else ``None``)."""

    status: int
    body: dict[str, Any] | None
    headers: Mapping[str, str]


class Fetcher:
    """Sends the auth code's own requests on its own ``requests.Session`` (never the MCP
    one: these must not carry the MCP server's token). A ``session`` given by the caller
    is used as it is (no adapter is mounted on it): its fetches get per-read timeouts
    lowered to what is left of the deadline, which bounds each wait but not a trickle."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, max_bytes: int = DEFAULT_MAX_BYTES,
                 session: requests.Session | None = None) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.session = session if session is not None else tracked_session()

    def deadline(self, what: str) -> Deadline:
        """A deadline of ``timeout`` seconds for an operation of several fetches."""
        return Deadline(self.timeout, what)

    def request(self, method: str, url: str, *, data: Mapping[str, str] | None = None,
                json_body: Any = None, headers: Mapping[str, str] | None = None,
                allow_redirects: bool = False, deadline: Deadline | None = None) -> Answer:
        """One bounded request, ended by ``timeout`` or ``deadline`` (the operation it is
        part of), whichever comes first. Raises :class:`~mcpsync.errors.TransportError`
        (unreachable, or the connection broke: in a person's words),
        :class:`~mcpsync.protocol.deadline.DeadlineExceeded` (out of time) or
        :class:`MessageTooLargeError` (past ``max_bytes``); a non-JSON or non-object
        body is ``body=None``, not an error."""
        what = f"{method} {url}"
        budget = (Deadline(self.timeout, what) if deadline is None
                  else deadline.within(self.timeout, what))
        sent = {"Accept": "application/json", **(headers or {})}
        try:
            with exchange(budget):
                budget.check()  # an operation already out of time sends nothing more
                with self.session.request(method, url, data=data, json=json_body,
                                          headers=sent, stream=True,
                                          timeout=timeouts(budget, self.timeout, self.timeout),
                                          allow_redirects=allow_redirects) as response:
                    raw = read_body(response, self.max_bytes)
                    status, answer_headers = response.status_code, dict(response.headers)
        except requests.RequestException as exc:
            # In a person's words ("cannot connect to URL: connection refused"), as the MCP
            # transport says it, not urllib3's retry text.
            raise local_error(exc, what) from None
        body: dict[str, Any] | None = None
        try:
            parsed = jsonrpc.loads(raw) if raw else None
        except ValueError:  # not JSON, or nested too deep
            parsed = None
        if isinstance(parsed, dict):
            body = parsed
        return Answer(status, body, answer_headers)

    def get_json(self, url: str, deadline: Deadline | None = None) -> Answer:
        return self.request("GET", url, deadline=deadline)


#: What :meth:`Fetcher.request` raises when there is no answer (all ``OSError``\ s: the
#: :class:`~mcpsync.errors.TransportError` of an unreachable server, ``DeadlineExceeded``,
#: :class:`MessageTooLargeError`); ``requests.RequestException`` is kept for safety.
FETCH_ERRORS: Final = (requests.RequestException, MessageTooLargeError, OSError)
