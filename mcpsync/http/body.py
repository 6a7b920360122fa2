"""Reading a request body: never more than ``max_body_bytes`` of it, whatever its framing
claims (:class:`BodyReader`). Malformed framing is a 400 with a JSON-RPC body, too large a
body a 413, before any of it reaches a parser.
"""

from __future__ import annotations

import logging

from ..errors import INVALID_REQUEST
from ..protocol.numerals import parse_decimal
from .replies import Environ, _HttpError

logger = logging.getLogger("mcpsync.http")


class BodyReader:
    """Reads the bodies of one app's requests, up to ``max_body_bytes``. Stateless
    between requests, so thread-safe."""

    def __init__(self, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes

    def read(self, environ: Environ) -> bytes:
        """The request body, never more than ``max_body_bytes`` of it read, whatever the
        framing claims; malformed framing is a 400 with a JSON-RPC body."""
        try:
            return self._read_framed(environ)
        except _HttpError:
            raise
        except Exception as exc:
            # The WSGI server's own framing errors surface here, as whatever it raises: a
            # chunk size that is not hex, a body cut short, a client gone mid-body.
            logger.debug("unreadable request body: %r", exc)
            raise _HttpError(INVALID_REQUEST,
                             "Bad request: malformed request body framing") from None

    def _read_framed(self, environ: Environ) -> bytes:
        length_text = str(environ.get("CONTENT_LENGTH") or "").strip()
        stream = environ["wsgi.input"]
        if length_text:
            # Digits only: int() would take "-1" (which some servers then read as "to
            # EOF"), "+5" or "1_0".
            length = parse_decimal(length_text)
            if length is None:
                raise _HttpError(INVALID_REQUEST,
                                 "Bad request: invalid Content-Length")
            if length > self.max_body_bytes:
                raise _HttpError(INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes",
                                 status="413 Content Too Large")
            data = bytes(stream.read(length))
            if len(data) != length:
                raise _HttpError(INVALID_REQUEST,
                                 "Bad request: the body ended before Content-Length bytes")
            return data
        if environ.get("wsgi.input_terminated") or environ.get("HTTP_TRANSFER_ENCODING"):
            data = bytes(stream.read(self.max_body_bytes + 1))
            if len(data) > self.max_body_bytes:
                raise _HttpError(INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes",
                                 status="413 Content Too Large")
            return data
        return b""


__all__ = ["BodyReader"]
