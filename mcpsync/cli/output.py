"""What the ``mcpsync`` command prints: tools and results for a person (or as JSON with
``--json``), and the server's log messages and progress on stderr while a call runs.

Stdout is the command's own: a server loaded into this process (``FILE:OBJ``) prints to
stderr while it loads, starts, runs and stops (:func:`stdout_to_stderr`), as it would over
stdio, so ``--json`` output is JSON and nothing else.

Everything printed comes from the server, so control characters are made visible before
they reach a terminal: a tool description must not be able to move the cursor, change
colours or set the window title.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ..codec import to_wire
from ..display.notebook import TextBar, parameters, progress_bar
from ..display.text import blob_size, cut


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While inside, whatever this process writes to stdout goes to stderr: ``print`` (on
    any thread), and the file descriptor itself, for a C extension or a child process that
    a tool starts. The command prints its own output after the block."""
    sys.stdout.flush()
    try:
        saved_fd = os.dup(1)
    except OSError:  # no stdout at all: only Python's prints to move
        saved_fd = -1
    else:
        os.dup2(2, 1)
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = saved
        sys.stderr.flush()
        if saved_fd >= 0:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def safe(text: object) -> str:
    """``text`` with every control character but newline and tab shown as ``\\xNN``."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else repr(ch)[1:-1]
                   for ch in str(text))


def tools_text(tools: Iterable[Any]) -> str:
    """One entry per tool: ``name(param*: type, ...)`` then its description, indented."""
    lines = []
    for tool in tools:
        lines.append(f"{safe(tool.name)}({safe(', '.join(parameters(tool.input_schema)))})")
        description = tool.description or tool.title
        if description:
            lines.extend("    " + safe(line) for line in cut(str(description)).splitlines())
    return "\n".join(lines)


def result_text(result: Any) -> str:
    """A result's blocks as text: text as is, other blocks as a one-line description, the
    structured content as JSON when there is no text."""
    parts = [block_text(block) for block in result.content]
    if result.structured_content is not None and not any(
            getattr(b, "type", None) == "text" for b in result.content):
        parts.append(cut(json.dumps(result.structured_content, indent=2, ensure_ascii=False)))
    return "\n".join(parts)


def block_text(block: Any) -> str:
    """One content block (of a result or a prompt message) as text: text as is (cut at
    :data:`~mcpsync.display.text.MAX_TEXT_CHARS`), other blocks as a one-line description."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return safe(cut(block.text))
    if kind in ("image", "audio"):
        return f"[{kind} {safe(block.mime_type)}, about {blob_size(block.data)} bytes]"
    if kind == "resource_link":
        return f"[resource link {safe(block.name)}: {safe(block.uri)}]"
    if kind == "resource":
        return contents_text(block.resource)
    return safe(cut(json.dumps(block, ensure_ascii=False, default=str)))


def contents_text(contents: Any) -> str:
    """A resource's contents: text as is (cut), a blob described by MIME type and size."""
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return safe(cut(text))
    mime = getattr(contents, "mime_type", None) or "unknown type"
    return (f"[blob {safe(mime)}, {blob_size(getattr(contents, 'blob', None))} bytes: "
            f"{safe(getattr(contents, 'uri', ''))}]")


def as_json(value: Any) -> str:
    """``value`` (a typed object or a list of them) as indented JSON in wire shape."""
    wire = [to_wire(v) for v in value] if isinstance(value, list) else to_wire(value)
    return json.dumps(wire, indent=2, ensure_ascii=False)


class Reporter:
    """Log messages and progress of a running call, on ``stream`` (stderr).

    On a terminal progress is a bar redrawn in place (tqdm when installed) and a log line
    first clears it; otherwise (a pipe, a file) every update is its own line, so that a
    script reading stderr sees whole lines.
    """

    def __init__(self, label: str, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.label = label
        self._bar: Any = progress_bar(label) if self.tty else None

    def log(self, message: Any) -> None:
        data = message.data
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False,
                                                              default=str)
        # "[level] logger: text", or "[level] text" when the server named no logger.
        who = f" {message.logger}:" if message.logger else ""
        line = safe(f"[{message.level}]{who} {text}")
        self.stream.write(("\r\x1b[K" if isinstance(self._bar, TextBar) else "") + line + "\n")
        self.stream.flush()

    def progress(self, progress: Any) -> None:
        if self._bar is not None:
            self._bar(progress)
            return
        total = f"/{_number(progress.total)}" if progress.total is not None else ""
        message = f" {progress.message}" if progress.message else ""
        self.stream.write(safe(f"progress: {_number(progress.progress)}{total}{message}")
                          + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
