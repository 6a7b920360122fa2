"""The progress bar ``on_progress="bar"`` draws: tqdm when it is installed, else text.

The text fallback must read well wherever stderr goes. Every update names the call (the
tool's name) and says how far it is, ``add: 2/5 (40%) copying``. On a terminal the line is
redrawn in place behind a bar; in a notebook (whose stderr is not a terminal but does honour
a carriage return) it is redrawn too, padded with spaces rather than a terminal's
erase-line escape, which a notebook would print; anywhere else (a pipe, a file, a log
collector) each update is a line of its own, so that the output stays readable there.
"""

from __future__ import annotations

import importlib
import sys
from typing import IO, Any

#: Longest line drawn for one update (a long message is cut).
MAX_LINE_CHARS = 200


class TextBar:
    """A progress line on ``stream`` (stderr), for when tqdm is not installed."""

    WIDTH = 20

    def __init__(self, description: str = "", stream: IO[str] | None = None) -> None:
        self.description = description
        self.stream = stream if stream is not None else sys.stderr
        self._terminal = _isatty(self.stream)
        self._redraw = self._terminal or _is_notebook(self.stream)
        self._drawn = 0  # length of the line on screen (redraw mode), 0: none
        self._last = ""

    def line(self, progress: Any) -> str:
        """What one update says: ``name: done/total (pct%) message``."""
        total = getattr(progress, "total", None)
        done = float(getattr(progress, "progress", 0.0))
        message = getattr(progress, "message", None) or ""
        label = f"{self.description}: " if self.description else ""
        if total:
            fraction = max(0.0, min(1.0, done / float(total)))
            bar = ""
            if self._terminal:
                filled = round(fraction * self.WIDTH)
                bar = "[" + "#" * filled + "-" * (self.WIDTH - filled) + "] "
            text = f"{label}{bar}{_number(done)}/{_number(total)} ({fraction:.0%})"
        else:
            text = f"{label}{_number(done)}"
        if message:
            text += f" {message}"
        return "".join(ch if ch.isprintable() else " " for ch in text)[:MAX_LINE_CHARS]

    def __call__(self, progress: Any) -> None:
        text = self.line(progress)
        if self._redraw:
            pad = " " * max(0, self._drawn - len(text))
            self.stream.write(f"\r{text}{pad}")
            self._drawn = max(1, len(text))
        elif text != self._last:
            self.stream.write(text + "\n")
        self._last = text
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = 0


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed, or not a real file
        return False


def _is_notebook(stream: IO[str]) -> bool:
    """Whether ``stream`` is a Jupyter kernel's output stream (ipykernel's ``OutStream``)."""
    return type(stream).__module__.split(".", 1)[0] == "ipykernel"


def _whole(value: Any) -> float | int:
    """An integral float as an int (tqdm shows ``4/4``, not ``4.0/4.0``)."""
    number = float(value)
    return int(number) if number.is_integer() else number


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class _TqdmBar:
    """The same, drawn by tqdm (which also knows notebooks: ``tqdm.auto``)."""

    def __init__(self, description: str, tqdm: Any) -> None:
        self._bar = tqdm(desc=description or None, total=None, leave=True)

    def __call__(self, progress: Any) -> None:
        total = getattr(progress, "total", None)
        if total is not None and self._bar.total != total:
            self._bar.total = _whole(total)
        self._bar.n = _whole(getattr(progress, "progress", 0.0))
        message = getattr(progress, "message", None)
        if message:
            self._bar.set_postfix_str(str(message), refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        self._bar.close()


def progress_bar(description: str = "", *, stream: IO[str] | None = None,
                 use_tqdm: bool | None = None) -> TextBar | _TqdmBar:
    """A progress handler drawing a bar: pass it as ``on_progress=`` and call ``close()``
    when the call returns (``on_progress="bar"`` does both for you).

    tqdm (``tqdm.auto``: a widget in a notebook) when it is installed and ``use_tqdm`` is
    not False; else a :class:`TextBar` on ``stream`` (stderr).
    """
    if use_tqdm is not False and stream is None:
        try:
            tqdm = importlib.import_module("tqdm.auto").tqdm  # optional: no hard dependency
        except ImportError:
            if use_tqdm:
                raise
        else:
            return _TqdmBar(description, tqdm)
    return TextBar(description, stream)


__all__ = ["TextBar", "progress_bar"]
