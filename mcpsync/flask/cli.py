"""``flask mcp stdio|inspect|serve``: the app's MCP server from Flask's command line.

* ``stdio [--user ID]`` — serve over stdin/stdout (what a host spawns), every request
  acting as the user the extension's ``user_by_id`` (Flask-Login's ``user_loader`` by
  default) returns for ``ID``.
* ``inspect [--user ID] [--json]`` — what the server offers (to that user).
* ``serve [--host H] [--port N]`` — the whole app on mcpsync's development server, which
  streams SSE answers as they are written (``flask run`` does too; this one also bounds
  slow clients, see docs/wsgi.md).
"""

from __future__ import annotations

import json
from typing import Any

import click
from flask import current_app
from flask.cli import AppGroup

mcp_group = AppGroup("mcp", help="Run or inspect the app's MCP server.")


def _extension() -> Any:
    extension = current_app.extensions.get("mcpsync")
    if extension is None:
        raise click.ClickException("this app has no MCP extension: MCP(app, server)")
    return extension


def _act_as(extension: Any, user_id: str | None) -> None:
    if user_id is None:
        return
    from .users import acting_as

    finder = extension.user_by_id
    if finder is None:
        manager = getattr(current_app, "login_manager", None)
        finder = getattr(manager, "_user_callback", None)
    if finder is None:
        raise click.ClickException("--user needs Flask-Login's user_loader or "
                                   "MCP(..., user_by_id=...)")
    user = finder(user_id)
    if user is None:
        raise click.ClickException(f"no user {user_id!r}")
    assert extension.server is not None
    extension.server.recv_middleware.insert(0, acting_as(user))


@mcp_group.command("stdio")
@click.option("--user", "user_id", help="act as this user (its id)")
def stdio(user_id: str | None) -> None:
    """Serve the MCP server over stdin/stdout."""
    extension = _extension()
    _act_as(extension, user_id)
    assert extension.server is not None
    extension.server.run_stdio()


@mcp_group.command("inspect")
@click.option("--user", "user_id", help="as this user sees it (its id)")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def inspect(user_id: str | None, as_json: bool) -> None:
    """List the tools, resources, templates and prompts the server offers."""
    from ..client.client import Client

    extension = _extension()
    _act_as(extension, user_id)
    server: Any = extension.server
    with Client.memory(server) as client:
        seen: dict[str, Any] = {
            "server": {"name": server.name, "version": server.version},
            "tools": [{"name": t.name, "description": t.description or ""}
                      for t in client.list_tools()],
            "resources": [{"uri": r.uri, "name": r.name} for r in client.list_resources()],
            "resourceTemplates": [{"uriTemplate": t.uri_template, "name": t.name}
                                  for t in client.list_resource_templates()],
            "prompts": [{"name": p.name, "description": p.description or ""}
                        for p in client.list_prompts()],
        }
    if as_json:
        click.echo(json.dumps(seen, indent=2))
        return
    click.echo(f"{server.name} {server.version}")
    for kind, key in (("tools", "name"), ("resources", "uri"),
                      ("resourceTemplates", "uriTemplate"), ("prompts", "name")):
        click.echo(f"{kind} ({len(seen[kind])}):")
        for item in seen[kind]:
            summary = (item.get("description") or item.get("name") or "").splitlines()
            click.echo(f"  {item[key]}" + (f"  {summary[0]}" if summary else ""))


@mcp_group.command("serve")
@click.option("--host", default="127.0.0.1")
@click.option("--port", default=8000, type=int)
def serve(host: str, port: int) -> None:
    """Serve the app on mcpsync's development server."""
    from ..http.devserver.server import DevServer
    from ..server.signals import StopSignals

    extension = _extension()
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    httpd = DevServer(host, port, app)
    click.echo(f"Serving the app at http://{host}:{httpd.server_port}/ (mcpsync development "
               "server; Ctrl-C to stop)")
    with StopSignals() as signals:
        try:
            signals.run(httpd.serve_forever)
        finally:
            httpd.server_close()
            extension.close()
            httpd.join_connections(10.0)


__all__ = ["mcp_group"]
