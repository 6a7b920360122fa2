"""``forward_identity="django"`` (issue 37): the MCP caller's Django user is the
``request.user`` of the in-process call, so the DRF project's permission classes (and a
plain Django view's checks) decide on the same user. Run in a child process
(django_user_child.py): Django is configured once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import require_module

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    require_module("rest_framework")
    require_module("drf_spectacular")
    database = tmp_path_factory.mktemp("library") / "db.sqlite3"
    env = dict(os.environ, LIBRARY_DB=str(database), PYTHONPATH=str(ROOT))
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, str(HERE / "django_user_child.py")],
                          capture_output=True, text=True, env=env, timeout=120, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_alice_is_admitted_and_bob_refused_by_the_apps_permission_class(
        seen: dict[str, Any]) -> None:
    assert not seen["alice_create"]["is_error"], seen["alice_create"]
    assert seen["alice_create"]["structured"]["added_by"] == "alice"  # request.user was alice
    assert seen["bob_create"]["is_error"]
    assert seen["bob_create"]["text"].endswith('{"detail":"you may not change the shelf"}')
    assert not seen["bob_list"]["is_error"]  # bob is signed in: he may read
    assert seen["bob_list"]["structured"]["result"][0]["title"] == "Dune"


def test_a_call_without_a_user_goes_in_anonymous(seen: dict[str, Any]) -> None:
    assert seen["anonymous_list"]["is_error"]
    assert "403" in seen["anonymous_list"]["text"]
    assert seen["anonymous_note"]["is_error"] and "403" in seen["anonymous_note"]["text"]


def test_a_plain_django_view_sees_the_user_through_the_middleware_on_a_post(
        seen: dict[str, Any]) -> None:
    # A POST with no CSRF token: the in-process call carries no browser's cookies.
    assert not seen["alice_note"]["is_error"], seen["alice_note"]
    assert seen["alice_note"]["structured"] == {"user": "alice"}


def test_a_remote_client_cannot_name_the_user(seen: dict[str, Any]) -> None:
    assert seen["forged_status"] == 403
