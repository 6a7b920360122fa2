"""The test site under Django's own ``runserver`` (a user's first server): users, and SSE
progress through the middleware while the tool runs; and the official Python SDK's
client through the endpoint, both eras, on a site that allows anonymous access."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsync import Client
from tests.helpers import WAIT
from tests.interop.conftest import official_python  # noqa: F401  (skips without the peer)
from tests.mounts.helpers import official

from .conftest import serve_site

ALICE = {"Authorization": "Token alice-token"}


@pytest.fixture(scope="module")
def runserver(site_db: Path) -> Iterator[str]:
    yield from serve_site("runserver", site_db)


@pytest.fixture(scope="module")
def anonymous_site(site_db: Path) -> Iterator[str]:
    yield from serve_site("gunicorn", site_db,
                          SHOPSITE_MCPSYNC_EXTRA=json.dumps({"ALLOW_ANONYMOUS": True}))


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_runserver_users_and_streamed_progress(runserver, version):
    first = threading.Event()
    outcome: list[object] = []
    with (Client.http(runserver + "/mcp", protocol_version=version, timeout=WAIT,
                      headers=ALICE) as caller,
          Client.http(runserver + "/mcp", protocol_version=version, timeout=WAIT,
                      headers={"X-Remote-User": "bob"}) as other):
        assert caller.call_tool("whoami").text == "alice (no header)"
        assert other.call_tool("whoami").text == "bob (remote-user)"

        def call() -> None:
            try:
                outcome.append(caller.call_tool("wait_for_release",
                                                on_progress=lambda p: first.set()).text)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=call, name="test-django-runserver-call")
        worker.start()
        try:
            assert first.wait(WAIT), "no progress arrived while the tool ran"
            assert not outcome
        finally:
            other.call_tool("release")
            worker.join(WAIT)
    assert outcome == ["released"]


@pytest.mark.interop
@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_official_client_through_the_django_endpoint(official_python, anonymous_site,  # noqa: F811
                                                     mode):
    url = anonymous_site + "/mcp"
    listed = official(url, mode, "list-tools")
    names = {t["name"] for t in listed["tools"]}
    assert {"whoami", "count_orders"} <= names and "refund" not in names  # anonymous
    called = official(url, mode, "call", "whoami", "{}")
    assert called["rawResult"]["content"][0]["text"] == "anonymous (no header)"
