# mypy: allow-subclassing-any
"""``manage.py mcp stdio|inspect|serve``: the project's MCP server, with Django set up.

* ``stdio [--user NAME]`` — serve over stdin/stdout (what a host such as Claude Desktop
  spawns), every request acting as that user (``ctx.user``; anonymous without one).
* ``inspect [--user NAME] [--json]`` — list the tools, resources, templates and prompts
  the server offers (to that user).
* ``serve [--host H] [--port N]`` — the whole site (Django's WSGI application, the MCP
  endpoint in its URLconf included) on mcpsync's development server, which streams SSE
  answers as they are written; for development, as ``runserver`` is.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Run or inspect the project's MCP server (stdio, inspect, serve)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        stdio = sub.add_parser("stdio", help="serve over stdin/stdout")
        stdio.add_argument("--user", help="act as this user (a username)")
        inspect = sub.add_parser("inspect", help="list what the server offers")
        inspect.add_argument("--user", help="as this user sees it (a username)")
        inspect.add_argument("--json", action="store_true", help="print JSON")
        serve = sub.add_parser("serve", help="serve the site on the development server")
        serve.add_argument("--host", default="127.0.0.1")
        serve.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, **options: Any) -> None:
        from ...server_hooks import install
        from ...site import get_server

        # Each app's mcp.py was imported when Django became ready (MCPSYNC["AUTODISCOVER"]).
        server = get_server()
        install(server)
        action = options["action"]
        if action == "serve":
            self._serve(options["host"], options["port"])
            return
        user = _user(options.get("user"))
        if user is not None:
            from ...users import acting_as

            server.recv_middleware.insert(0, acting_as(user))
        if action == "stdio":
            server.run_stdio()
        else:
            self._inspect(server, bool(options["json"]))

    def _inspect(self, server: Any, as_json: bool) -> None:
        from ....client.client import Client

        with Client.memory(server) as client:
            seen: dict[str, Any] = {
                "server": {"name": server.name, "version": server.version},
                "tools": [{"name": t.name, "description": t.description or ""}
                          for t in client.list_tools()],
                "resources": [{"uri": r.uri, "name": r.name}
                              for r in client.list_resources()],
                "resourceTemplates": [{"uriTemplate": t.uri_template, "name": t.name}
                                      for t in client.list_resource_templates()],
                "prompts": [{"name": p.name, "description": p.description or ""}
                            for p in client.list_prompts()],
            }
        if as_json:
            self.stdout.write(json.dumps(seen, indent=2))
            return
        self.stdout.write(f"{server.name} {server.version}")
        for kind, key in (("tools", "name"), ("resources", "uri"),
                          ("resourceTemplates", "uriTemplate"), ("prompts", "name")):
            self.stdout.write(f"{kind} ({len(seen[kind])}):")
            for item in seen[kind]:
                summary = (item.get("description") or item.get("name") or "").splitlines()
                self.stdout.write(f"  {item[key]}" + (f"  {summary[0]}" if summary else ""))

    def _serve(self, host: str, port: int) -> None:
        from django.core.wsgi import get_wsgi_application

        from ....http.devserver.server import DevServer
        from ....server.signals import StopSignals
        from ...endpoint import close_endpoints

        application = get_wsgi_application()
        httpd = DevServer(host, port, application)
        self.stdout.write(f"Serving the site at http://{host}:{httpd.server_port}/ "
                          "(mcpsync development server; Ctrl-C to stop)")
        self.stdout.flush()
        with StopSignals() as signals:
            try:
                signals.run(httpd.serve_forever)
            finally:
                httpd.server_close()
                close_endpoints()
                httpd.join_connections(10.0)


def _user(name: str | None) -> Any:
    if name is None:
        return None
    from django.contrib.auth import get_user_model
    from django.db import connections

    model = get_user_model()
    try:
        user = model._default_manager.get_by_natural_key(name)
    except model.DoesNotExist:
        raise CommandError(f"no user {name!r}") from None
    finally:
        connections.close_all()  # this thread serves no queries from now on
    return user
