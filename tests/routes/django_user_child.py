"""Run in a child process by test_django_user.py: the DRF project of drf_project/ made an
MCP server with ``Server.from_wsgi(..., forward_identity="django")``. The MCP request's
Django user (``ctx.user``, which mcpsync.django's endpoint sets from ``request.user``) is
set here by a request scope in the same slot, from the test's ``_meta``; each call then goes
into Django in process. A real HTTP request that names the private environ key in a header
is also sent to the same project. Prints what was seen as one JSON object."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

NOTE_DOCUMENT = {
    "openapi": "3.1.0", "info": {"title": "notes", "version": "1"},
    "paths": {"/note/": {"post": {"operationId": "note", "responses": {"200": {
        "description": "who", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"user": {"type": ["string", "null"]}}}}}}}}}},
}


def main() -> None:
    sys.path.insert(0, str(HERE / "drf_project"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "library.settings_django_user"
    import django

    django.setup()
    import requests
    from django.contrib.auth.models import Permission, User
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command

    call_command("migrate", run_syncdb=True, verbosity=0)
    alice = User.objects.create(username="alice")
    alice.user_permissions.add(Permission.objects.get(codename="add_book"))
    User.objects.create(username="bob")

    from mcpsync import Client, HandlerContext, Server
    from mcpsync.routes import RouteMap
    from mcpsync.routes.django_user import ENVIRON_KEY
    from tests.serving import RunningServer

    def as_user(server: Server) -> None:
        @server.request_scope
        def user(ctx: HandlerContext) -> Iterator[None]:
            name = ctx.meta.get("test/user")
            ctx.transport.user = None if name is None else User.objects.get(username=name)
            yield

    api = Server.from_wsgi(WSGIHandler(), name="library", forward_identity="django",
                           route_maps=[RouteMap(pattern=r"^/api/schema/", kind="exclude")])
    notes = Server.from_wsgi(WSGIHandler(), openapi=NOTE_DOCUMENT, forward_identity="django")
    as_user(api)
    as_user(notes)

    def result(value: Any) -> dict[str, Any]:
        return {"is_error": value.is_error, "structured": value.structured_content,
                "text": value.content[0].text if value.content else None}

    seen: dict[str, Any] = {}
    with Client.memory(api) as client:
        seen["anonymous_list"] = result(client.call_tool("books_list"))
        seen["bob_create"] = result(client.call_tool(
            "books_create", {"title": "Dune"}, meta={"test/user": "bob"}))
        seen["alice_create"] = result(client.call_tool(
            "books_create", {"title": "Dune", "author": "Herbert"},
            meta={"test/user": "alice"}))
        seen["bob_list"] = result(client.call_tool("books_list", meta={"test/user": "bob"}))
    with Client.memory(notes) as client:
        seen["alice_note"] = result(client.call_tool("note", meta={"test/user": "alice"}))
        seen["anonymous_note"] = result(client.call_tool("note"))
    # The same project over real HTTP: a client naming the private key in a header (or
    # sending a name where a user object is expected) is nobody.
    with RunningServer(WSGIHandler()) as http:
        forged = requests.get(f"{http.base}/api/books/", timeout=30,
                              headers={ENVIRON_KEY: "alice", "Host": "localhost"})
    seen["forged_status"] = forged.status_code
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
