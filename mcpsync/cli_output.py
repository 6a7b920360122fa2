"""What the ``mcpsync`` command prints: tools and results for a person (or as JSON with
``--json``), and the server's log messages and progress on stderr while a call runs.

Everything printed comes from the server, so control characters are made visible before
they reach a terminal: a tool description must not be able to move the cursor, change
colours or set the window title.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import IO, Any

from .codec import to_wire
from .display import TextBar, parameters, progress_bar


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
            lines.extend("    " + safe(line) for line in str(description).splitlines())
    return "\n".join(lines)


def result_text(result: Any) -> str:
    """A result's blocks as text: text as is, other blocks as a one-line description, the
    structured content as JSON when there is no text."""
    parts = []
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(safe(block.text))
        elif kind in ("image", "audio"):
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind} {safe(block.mime_type)}, about {size} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link {safe(block.name)}: {safe(block.uri)}]")
        elif kind == "resource":
            contents = block.resource
            text = getattr(contents, "text", None)
            parts.append(safe(text) if isinstance(text, str) else
                         f"[resource {safe(getattr(contents, 'uri', ''))}, blob]")
        else:
            parts.append(safe(json.dumps(block, ensure_ascii=False, default=str)))
    if result.structured_content is not None and not any(
            getattr(b, "type", None) == "text" for b in result.content):
        parts.append(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
    return "\n".join(parts)


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
        who = f" {message.logger}" if message.logger else ""
        line = safe(f"[{message.level}]{who}: {text}")
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
