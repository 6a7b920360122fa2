"""Bounded HTTP for the OAuth flow: every fetch has a timeout and a size bound.

Metadata documents, registration and token answers come from servers the client does
not trust yet, so each body is read in chunks and abandoned past ``max_bytes`` (never
loaded whole first), and each request gives up after ``timeout`` seconds of silence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import requests

from ..errors import MessageTooLargeError
from ..protocol import jsonrpc
from ..transports.http_io import read_body

#: Seconds to connect and between bytes of one authorization-related request.
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
    """Sends the OAuth flow's own requests on its own ``requests.Session`` (never the
    MCP one: these must not carry the MCP server's token)."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, max_bytes: int = DEFAULT_MAX_BYTES,
                 session: requests.Session | None = None) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.session = session if session is not None else requests.Session()

    def request(self, method: str, url: str, *, data: Mapping[str, str] | None = None,
                json_body: Any = None, headers: Mapping[str, str] | None = None,
                allow_redirects: bool = False) -> Answer:
        """One bounded request. Raises ``requests.RequestException`` (unreachable, timed
        out) or :class:`MessageTooLargeError` (past ``max_bytes``); a non-JSON or non-object
        body is ``body=None``, not an error."""
        sent = {"Accept": "application/json", **(headers or {})}
        with self.session.request(method, url, data=data, json=json_body, headers=sent,
                                  timeout=(self.timeout, self.timeout), stream=True,
                                  allow_redirects=allow_redirects) as response:
            raw = read_body(response, self.max_bytes)
            body: dict[str, Any] | None = None
            try:
                parsed = jsonrpc.loads(raw) if raw else None
            except ValueError:  # not JSON, or nested too deep
                parsed = None
            if isinstance(parsed, dict):
                body = parsed
            return Answer(response.status_code, body, dict(response.headers))

    def get_json(self, url: str) -> Answer:
        return self.request("GET", url)


FETCH_ERRORS: Final = (requests.RequestException, MessageTooLargeError, OSError)
