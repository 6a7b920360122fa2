"""Where an HTTP/1.1 request ends, decided from bytes as they arrive: the head (request line
and headers, bounded in size) and then the body, framed by ``Content-Length`` or chunked.

The development server reads a whole request before a handler thread sees it (see
:mod:`.reader`), so it must know where each request ends, and refuse a request
whose framing is bad or too large *before* reading its body: ``Content-Length: -1`` with a
64 MiB body would otherwise be read (and, on werkzeug's own server, buffered ten megabytes
at a time) just to be refused. Nothing here reads a socket; it looks at a buffer.

Chunked bodies are supported (decoded size bounded by the body limit, chunk-size lines
and trailers bounded too); the bytes are kept as sent and werkzeug decodes them again
for the application. A request with both ``Content-Length`` and ``Transfer-Encoding``,
or a transfer coding other than ``chunked``, is refused (400/501): what a proxy in front
and this server take for the request's end must never differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: The request line and headers together, and how many header lines.
MAX_HEAD_BYTES: Final = 64 * 1024
MAX_HEADERS: Final = 100
#: One chunk-size line (with extensions) and the trailer section of a chunked body.
_MAX_CHUNK_LINE: Final = 1024
_MAX_TRAILERS: Final = 8 * 1024


class FramingError(Exception):
    """A request that is answered ``status`` and closed, unread past its head."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message


def _bad(message: str) -> FramingError:
    return FramingError(400, "Bad Request", message)


def head_end(buffer: bytes | bytearray, searched: int = 0) -> int | None:
    """The index just past the blank line that ends the head, or ``None`` if it has not
    arrived yet; ``searched`` is how far an earlier call looked (so each byte is looked at
    a bounded number of times). A head longer than :data:`MAX_HEAD_BYTES` is refused (431).
    Leading empty lines before the request line are skipped by the caller, as RFC 9112
    §2.2 allows."""
    crlf = buffer.find(b"\r\n\r\n", max(0, searched - 3), MAX_HEAD_BYTES + 4)
    bare = buffer.find(b"\n\n", max(0, searched - 1), MAX_HEAD_BYTES + 2)
    ends = [at + 4 for at in (crlf,) if at >= 0] + [at + 2 for at in (bare,) if at >= 0]
    if ends:
        return min(ends)
    if len(buffer) > MAX_HEAD_BYTES:
        raise FramingError(431, "Request Header Fields Too Large",
                           f"Bad request: the request line and headers exceed "
                           f"{MAX_HEAD_BYTES} bytes")
    return None


@dataclass(frozen=True)
class Framing:
    """What the head says about the body: ``length`` bytes, or ``chunked``; whether the
    client waits for ``100 Continue``, and whether it asked to keep the connection."""

    length: int = 0
    chunked: bool = False
    expect_continue: bool = False
    keep_alive: bool = False


def framing(head: bytes, max_body: int) -> Framing:
    """The body framing of a request ``head`` (request line and headers), refusing what
    must not be read: a bad, negative, repeated-and-different or too large
    ``Content-Length`` (400 / 413), an unknown transfer coding (501), both framings at once
    (400), too many header lines (431)."""
    lines = head.decode("latin-1").splitlines()
    request = lines[0].split() if lines else []
    if len(request) != 3 or not request[2].startswith("HTTP/"):
        # Not ours to judge: werkzeug answers a bad request line; there is no body to read.
        return Framing()
    if len(lines) > MAX_HEADERS + 2:
        raise FramingError(431, "Request Header Fields Too Large",
                           f"Bad request: more than {MAX_HEADERS} header lines")
    lengths: list[str] = []
    codings: list[str] = []
    connection: list[str] = []
    expect = ""
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            continue
        if name != name.strip():
            raise _bad("Bad request: whitespace before the colon of a header name")
        key = name.lower()
        value = value.strip(" \t")
        if key == "content-length":
            lengths.extend(part.strip(" \t") for part in value.split(","))
        elif key == "transfer-encoding":
            codings.extend(part.strip(" \t").lower() for part in value.split(",") if part.strip())
        elif key == "connection":
            connection.extend(part.strip(" \t").lower() for part in value.split(","))
        elif key == "expect":
            expect = value.lower()
    version = request[2]
    keep_alive = ("close" not in connection if version == "HTTP/1.1"
                  else "keep-alive" in connection)
    expect_continue = expect == "100-continue"
    if codings:
        if lengths:
            raise _bad("Bad request: both Content-Length and Transfer-Encoding")
        if codings != ["chunked"]:
            raise FramingError(501, "Not Implemented",
                               "Not implemented: the only transfer coding accepted is chunked")
        return Framing(chunked=True, expect_continue=expect_continue, keep_alive=keep_alive)
    if not lengths:
        return Framing(keep_alive=keep_alive)
    if len(set(lengths)) != 1 or not all(_digits(text) for text in lengths):
        # Digits only: "-1" (read as "to EOF" by some servers), "+5", "0x40", "1_0".
        raise _bad("Bad request: invalid Content-Length")
    length = int(lengths[0])
    if length > max_body:
        raise FramingError(413, "Content Too Large",
                           f"Request body larger than {max_body} bytes")
    return Framing(length=length, expect_continue=expect_continue, keep_alive=keep_alive)


def _digits(text: str) -> bool:
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()


class ChunkedScanner:
    """Finds the end of a chunked body in a growing buffer, incrementally: each call
    resumes where the last stopped. The decoded size is bounded by ``max_body`` (413),
    chunk-size lines and trailers are bounded, and bad syntax is 400."""

    def __init__(self, start: int, max_body: int) -> None:
        self._at = start  # the next chunk-size line (or, in the trailers, the next line)
        self._max_body = max_body
        self._decoded = 0
        self._trailers_from: int | None = None

    def end(self, buffer: bytes | bytearray) -> int | None:
        """The index just past the body, or ``None`` if more bytes are needed."""
        while True:
            eol = buffer.find(b"\n", self._at)
            if eol < 0:
                limit = _MAX_TRAILERS if self._trailers_from is not None else _MAX_CHUNK_LINE
                if len(buffer) - self._at > limit:
                    raise _bad("Bad request: a chunk-size line or the trailers are too long")
                return None
            line = bytes(buffer[self._at:eol]).rstrip(b"\r")
            if self._trailers_from is not None:
                self._at = eol + 1
                if not line:
                    return self._at
                if self._at - self._trailers_from > _MAX_TRAILERS:
                    raise _bad("Bad request: the chunked trailers are too long")
                continue
            if eol - self._at > _MAX_CHUNK_LINE:
                raise _bad("Bad request: a chunk-size line is too long")
            size_text = line.split(b";", 1)[0].strip(b" \t")
            if not size_text or len(size_text) > 16 or any(
                    c not in b"0123456789abcdefABCDEF" for c in size_text):
                raise _bad("Bad request: a chunk size that is not hexadecimal")
            size = int(size_text, 16)
            if size == 0:
                self._at = eol + 1
                self._trailers_from = self._at
                continue
            if self._decoded + size > self._max_body:
                raise FramingError(413, "Content Too Large",
                                   f"Request body larger than {self._max_body} bytes")
            data_end = eol + 1 + size
            if len(buffer) < data_end + 2:
                return None  # the chunk has not all arrived: this line is read again
            after = bytes(buffer[data_end:data_end + 2])
            if after != b"\r\n" and after[:1] != b"\n":
                raise _bad("Bad request: a chunk is not followed by CRLF")
            self._decoded += size
            self._at = data_end + (2 if after == b"\r\n" else 1)

__all__ = ["MAX_HEAD_BYTES", "ChunkedScanner", "Framing", "FramingError", "framing",
           "head_end"]
