"""Flask integration: ``MCP(app, server, path="/mcp")`` puts the MCP endpoint among the
app's routes, Flask-Login's ``current_user`` becomes ``ctx.user``, handlers run inside the
app context (Flask-SQLAlchemy's session removed after each), and ``flask mcp stdio|
inspect|serve`` run it from the command line. See docs/flask.md."""

from __future__ import annotations

from .extension import MCP
from .users import acting_as, current_request

__all__ = ["MCP", "acting_as", "current_request"]
