"""The official Python SDK's client through the Flask route, both eras, under gunicorn
(an app variant that allows anonymous access: the driver sends no credentials)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.conftest import official_python  # noqa: F401  (skips without the peer)
from tests.mounts.helpers import official
from tests.serving import free_port, serving_process

from .conftest import APP, app_env


@pytest.fixture(scope="module")
def anonymous_app(app_db: Path) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--workers", "1",
            "--threads", "8", "--bind", f"127.0.0.1:{port}", "shop_app:app"]
    with serving_process(argv, port, cwd=APP,
                        env={**app_env(app_db), "SHOP_ALLOW_ANONYMOUS": "1"}) as base:
        yield base


@pytest.mark.interop
@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_official_client_through_the_flask_route(official_python, anonymous_app,  # noqa: F811
                                                 mode):
    url = anonymous_app + "/mcp"
    names = {t["name"] for t in official(url, mode, "list-tools")["tools"]}
    assert {"whoami", "count_orders"} <= names and "refund" not in names
    called = official(url, mode, "call", "whoami", "{}")
    assert called["rawResult"]["content"][0]["text"] == "anonymous"
    counted = official(url, mode, "call", "count_orders", "{}")
    assert counted["rawResult"]["structuredContent"]["result"] >= 0
