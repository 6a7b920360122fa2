"""Run in a child process by test_drf.py: set up the DRF project in drf_project/, make it
an MCP server with ``Server.from_wsgi`` (document from drf-spectacular), call its tools as
two users, and print what was seen as one JSON object on stdout.

A child process because Django is configured once per process, and the suite's own Django
example project is configured in the test process by other tests."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def main() -> None:
    sys.path.insert(0, str(HERE / "drf_project"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "library.settings"  # this child's own environ
    import django

    django.setup()
    from django.contrib.auth.models import Permission, User
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command

    call_command("migrate", run_syncdb=True, verbosity=0)
    alice = User.objects.create(username="alice")
    alice.user_permissions.add(Permission.objects.get(codename="add_book"))
    User.objects.create(username="bob")

    from shelf import views

    from mcpsync import AccessToken, Client, HandlerContext, Server
    from mcpsync.routes import RouteMap

    server = Server.from_wsgi(WSGIHandler(), name="library", forward_identity="remote_user",
                              route_maps=[RouteMap(pattern=r"^/api/schema/", kind="exclude"),
                                          RouteMap(methods=["PUT"], kind="exclude")])

    @server.request_scope
    def authenticate(ctx: HandlerContext) -> Iterator[None]:
        user = ctx.meta.get("test/user")
        ctx.transport.auth = None if user is None else AccessToken(user, "host", frozenset())
        yield

    seen: dict[str, Any] = {}

    def result(value: Any) -> dict[str, Any]:
        return {"is_error": value.is_error, "structured": value.structured_content,
                "text": value.content[0].text if value.content else None}

    handler_threads: list[int] = []

    @server.request_scope
    def note_thread(ctx: HandlerContext) -> Iterator[None]:
        handler_threads.append(threading.get_ident())
        yield

    with Client.memory(server) as client:
        seen["tools"] = [{"name": t.name, "input": t.input_schema, "output": t.output_schema,
                          "description": t.description} for t in client.list_tools()]
        seen["anonymous_list"] = result(client.call_tool("books_list"))
        seen["bob_create"] = result(client.call_tool(
            "books_create", {"title": "Dune"}, meta={"test/user": "bob"}))
        seen["alice_create"] = result(client.call_tool(
            "books_create", {"title": "Dune", "author": "Herbert", "year": 1965},
            meta={"test/user": "alice"}))
        seen["bob_list"] = result(client.call_tool("books_list", meta={"test/user": "bob"}))
        seen["bob_retrieve"] = result(client.call_tool("books_retrieve", {"id": 1},
                                                       meta={"test/user": "bob"}))
        seen["bob_missing"] = result(client.call_tool("books_retrieve", {"id": 99},
                                                      meta={"test/user": "bob"}))
        seen["alice_patch"] = result(client.call_tool(
            "books_partial_update", {"id": 1, "year": 1966}, meta={"test/user": "alice"}))
        seen["bob_destroy"] = result(client.call_tool("books_destroy", {"id": 1},
                                                      meta={"test/user": "bob"}))
    seen["views_ran_on_handler_threads"] = bool(views.THREADS) and set(views.THREADS) <= set(
        handler_threads)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
