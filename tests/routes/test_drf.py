"""A real Django REST framework project (a ModelViewSet, a ModelSerializer, a permission
class, RemoteUser authentication, drf-spectacular) made an MCP server with
``Server.from_wsgi``; the calls go into Django in process. Run in a child process
(drf_child.py): Django is configured once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    database = tmp_path_factory.mktemp("library") / "db.sqlite3"
    env = dict(os.environ, LIBRARY_DB=str(database), PYTHONPATH=str(ROOT))
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, str(HERE / "drf_child.py")], capture_output=True,
                          text=True, env=env, timeout=120, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_viewset_routes_are_tools_as_the_route_maps_say(seen: dict[str, Any]):
    names = [t["name"] for t in seen["tools"]]
    # the schema view and PUT (update) are excluded by the route maps
    assert names == ["books_list", "books_create", "books_retrieve", "books_destroy",
                     "books_partial_update"]
    create = next(t for t in seen["tools"] if t["name"] == "books_create")
    # the serializer's read-only id and added_by are not arguments
    assert set(create["input"]["properties"]) == {"title", "author", "year"}
    assert create["input"]["required"] == ["title"]
    assert create["input"]["properties"]["year"]["type"] == ["integer", "null"]


def test_the_apps_permission_classes_decide(seen: dict[str, Any]):
    assert seen["anonymous_list"]["is_error"]
    assert seen["anonymous_list"]["text"] == ('GET /api/books/ answered 403 Forbidden: '
                                              '{"detail":"Authentication credentials were '
                                              'not provided."}')
    assert seen["bob_create"]["is_error"]
    assert seen["bob_create"]["text"].endswith('{"detail":"you may not change the shelf"}')
    assert seen["bob_destroy"]["is_error"]
    assert not seen["alice_create"]["is_error"]
    assert seen["alice_create"]["structured"]["added_by"] == "alice"  # request.user was alice
    assert not seen["alice_patch"]["is_error"]
    assert seen["alice_patch"]["structured"]["year"] == 1966


def test_answers_validate_against_the_output_schemas(seen: dict[str, Any]):
    tools = {t["name"]: t for t in seen["tools"]}
    for key, tool in (("alice_create", "books_create"), ("bob_list", "books_list"),
                      ("bob_retrieve", "books_retrieve"), ("alice_patch", "books_partial_update")):
        assert not seen[key]["is_error"], seen[key]
        jsonschema.validate(seen[key]["structured"], tools[tool]["output"])
    assert seen["bob_list"]["structured"]["result"][0]["title"] == "Dune"
    assert seen["bob_missing"]["text"].startswith("GET /api/books/{id}/ answered 404 Not Found")


def test_the_views_ran_in_process_on_the_mcp_handler_threads(seen: dict[str, Any]):
    assert seen["views_ran_on_handler_threads"] is True
