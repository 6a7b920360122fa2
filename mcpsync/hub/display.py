"""How a :class:`~mcpsync.hub.Hub` shows itself: in a terminal (its ``repr``) and in a
notebook (a table of its servers: name, state, command or URL). Whatever a server or a
configuration says is untrusted text: escaped as :mod:`mcpsync.display.notebook` escapes
a server's strings, and cut short. A command line or URL is redacted as the client's
``repr`` redacts it (``--api-key=…``, ``user:password@``); headers and ``env`` values
are never shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..display.notebook import _e, _md
from ..protocol.redact import redact

Row = tuple[str, str, str]
#: Longest text of one cell.
MAX_CELL = 200


def _cell(text: str) -> str:
    return redact(text)[:MAX_CELL]


def hub_text(rows: Sequence[Row], *, closed: bool) -> str:
    """``<Hub 2 of 3 servers: calc (connected, 2025-11-25), ... , broken (failed: ...)>``."""
    live = sum(1 for _, state, _ in rows if state.startswith("connected"))
    parts = ", ".join(f"{name} ({_cell(state)[:80]!s})" for name, state, _ in rows)
    head = "closed" if closed else f"{live} of {len(rows)} servers"
    return f"<Hub {head}: {parts}>" if rows else f"<Hub {head}>"


def hub_html(rows: Sequence[Row]) -> str:
    if not rows:
        return "<em>(no servers)</em>"
    body = "".join(
        f"<tr><td><b>{_e(name)}</b></td><td style=\"text-align:left\">{_e(_cell(state))}"
        f"</td><td style=\"text-align:left\"><code>{_e(_cell(where))}</code></td></tr>"
        for name, state, where in rows)
    return ("<table><thead><tr><th>server</th><th>state</th><th>command or URL</th></tr>"
            "</thead><tbody>" + body + "</tbody></table>")


def hub_markdown(rows: Sequence[Row]) -> str:
    if not rows:
        return "*(no servers)*"
    lines = ["| server | state | command or URL |", "|---|---|---|"]
    lines.extend(f"| **{_md(name)}** | {_md(_cell(state))} | {_md(_cell(where))} |"
                 for name, state, where in rows)
    return "\n".join(lines)


__all__ = ["hub_html", "hub_markdown", "hub_text"]
