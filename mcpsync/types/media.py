"""``Image`` and ``Audio``: content blocks made from bytes or a file, MIME type detected.

They are :class:`ImageContent` / :class:`AudioContent` (subclasses with a friendlier
constructor), so they go wherever a content block goes: a tool's result, a prompt message.
The MIME type comes from ``mime_type=``, else the data's leading bytes, else the file
name's extension; an image or audio type is required, because a client renders the block
by it.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from .content import AudioContent, ImageContent

#: Leading bytes of common formats: (offset, magic, MIME type).
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"BM", "image/bmp"),
    (0, b"<svg", "image/svg+xml"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\xff\xfb", "audio/mpeg"),
    (0, b"\xff\xf3", "audio/mpeg"),
    (0, b"OggS", "audio/ogg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"%PDF-", "application/pdf"),
)
_RIFF = {b"WEBP": "image/webp", b"WAVE": "audio/wav"}


def sniff_mime(data: bytes) -> str | None:
    """The MIME type the leading bytes of ``data`` announce, or ``None``."""
    head = bytes(data[:16])
    if head[:4] == b"RIFF" and head[8:12] in _RIFF:
        return _RIFF[head[8:12]]
    if head[4:8] == b"ftyp":
        return "audio/mp4" if head[8:11] == b"M4A" else None
    for offset, magic, mime in _MAGIC:
        if head[offset:offset + len(magic)] == magic:
            return mime
    return None


def _load(data: bytes | bytearray | memoryview | str | os.PathLike[str] | None,
          path: str | os.PathLike[str] | None, mime_type: str | None,
          kind: str) -> tuple[str, str]:
    if (data is None) == (path is None):
        raise TypeError(f"{kind.title()}(): pass the bytes or path=, exactly one of them")
    if isinstance(data, (str, os.PathLike)):
        path, data = data, None  # Image("chart.png") reads the file
    if path is not None:
        with open(path, "rb") as f:
            raw = f.read()
    else:
        assert data is not None
        raw = bytes(data)
    mime = mime_type or sniff_mime(raw)
    if mime is None and path is not None:
        import mimetypes  # builds its tables at import; only media helpers need it

        mime = mimetypes.guess_type(os.fspath(path))[0]
    if mime is None or not mime.startswith(kind + "/"):
        raise ValueError(f"{kind.title()}(): cannot tell the {kind} type "
                         f"({'got ' + mime if mime else 'unknown data'}); pass mime_type=")
    return base64.b64encode(raw).decode("ascii"), mime


class Image(ImageContent):
    """An image content block: ``Image(png_bytes)``, ``Image("chart.png")``,
    ``Image(path=p, mime_type="image/png")``. ``ValueError`` when the type is unknown."""

    def __init__(self, data: bytes | bytearray | memoryview | str | os.PathLike[str] | None
                 = None, *, path: str | os.PathLike[str] | None = None,
                 mime_type: str | None = None, **fields: Any) -> None:
        encoded, mime = _load(data, path, mime_type, "image")
        super().__init__(data=encoded, mime_type=mime, **fields)


class Audio(AudioContent):
    """An audio content block: ``Audio(wav_bytes)``, ``Audio("note.mp3")``,
    ``Audio(path=p, mime_type="audio/wav")``. ``ValueError`` when the type is unknown."""

    def __init__(self, data: bytes | bytearray | memoryview | str | os.PathLike[str] | None
                 = None, *, path: str | os.PathLike[str] | None = None,
                 mime_type: str | None = None, **fields: Any) -> None:
        encoded, mime = _load(data, path, mime_type, "audio")
        super().__init__(data=encoded, mime_type=mime, **fields)
