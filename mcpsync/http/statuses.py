"""The one table from JSON-RPC error codes to HTTP statuses.

A POST whose whole answer is one JSON-RPC error gets the status this table gives for the
error's code, whoever made the error: the router refusing the request before any handler
(a body that is not JSON, a header that contradicts the body, an unknown session), or the
handler's own answer. Kept in one place so that the eras and the refusal paths can not
drift apart (they had three tables between them). The spec sets statuses for the
2026-07-28 envelope and header errors and for an unknown method; the handshake era sets
them for malformed requests and unknown sessions only; any other error is a JSON-RPC
error in the body of a successful exchange (200), as the official SDKs answer it.

A refusal that is about the HTTP exchange itself rather than its JSON-RPC content (a
forbidden ``Host``, a wrong ``Content-Type``, a body too large, a second GET stream) names
its own status (403, 415, 413, 409...): the code there is only the body's generic -32600.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from ..errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)

#: The code of a handshake-era request on a session this server does not hold (expired,
#: evicted, deleted, never made): with a 404 the client initializes again.
SESSION_NOT_FOUND: Final = -32001

OK: Final = "200 OK"
BAD_REQUEST: Final = "400 Bad Request"
NOT_FOUND: Final = "404 Not Found"
UNAVAILABLE: Final = "503 Service Unavailable"


class Statuses(NamedTuple):
    """The statuses of one code: as a refusal made before any handler ran, as the
    answer of a 2026-07-28 request, as the answer of a handshake-era request."""

    refused: str
    modern: str
    handshake: str


#: code -> its statuses. A code not listed: 400 as a refusal, 200 as an answer.
STATUSES: Final[Mapping[int, Statuses]] = {
    PARSE_ERROR: Statuses(BAD_REQUEST, BAD_REQUEST, BAD_REQUEST),
    INVALID_REQUEST: Statuses(BAD_REQUEST, BAD_REQUEST, BAD_REQUEST),
    INVALID_PARAMS: Statuses(BAD_REQUEST, OK, OK),  # refused: the envelope's _meta
    METHOD_NOT_FOUND: Statuses(NOT_FOUND, NOT_FOUND, OK),
    HEADER_MISMATCH: Statuses(BAD_REQUEST, BAD_REQUEST, OK),
    MISSING_CLIENT_CAPABILITY: Statuses(BAD_REQUEST, BAD_REQUEST, OK),
    UNSUPPORTED_PROTOCOL_VERSION: Statuses(BAD_REQUEST, BAD_REQUEST, OK),
    SESSION_NOT_FOUND: Statuses(NOT_FOUND, OK, OK),  # a handler's -32001 is its own
    INTERNAL_ERROR: Statuses(UNAVAILABLE, OK, OK),  # refused: busy, store down, no answer
}
_DEFAULT: Final = Statuses(BAD_REQUEST, OK, OK)


def refused_status(code: int) -> str:
    """The status of a request refused with ``code`` before any handler ran."""
    return STATUSES.get(code, _DEFAULT).refused


def answer_status(code: object, *, modern: bool) -> str:
    """The status of a POST answered with one error of ``code`` (by its handler, or by
    middleware) in 2026-07-28 (``modern``) or in the handshake era."""
    statuses = STATUSES.get(code, _DEFAULT) if isinstance(code, int) else _DEFAULT
    return statuses.modern if modern else statuses.handshake


__all__ = ["SESSION_NOT_FOUND", "STATUSES", "Statuses", "answer_status", "refused_status"]
