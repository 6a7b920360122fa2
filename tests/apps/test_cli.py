"""``mcpsync apps preview``: a real process serving the preview, seen in a real browser."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest
import requests

from tests.helpers import require_module
from tests.serving import ROOT, free_port, serving_process, with_root_on_path

expect = require_module("playwright.sync_api", package="playwright").expect


def test_preview_serves_the_view_of_a_tool(page: Any) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "mcpsync", "apps", "preview", "tests.apps.demo_server:server",
            "show", "city=Bergen", "--port", str(port)]
    with serving_process(argv, port, cwd=ROOT, env=with_root_on_path()) as base:
        answer = requests.get(base + "/", timeout=30)
        assert answer.status_code == 200
        assert "frame-src http://127.0.0.1:" in answer.headers["Content-Security-Policy"]
        page.goto(base + "/")
        view = page.frame_locator("#view").frame_locator("iframe")
        expect(view.locator("#input")).to_have_text('{"city":"Bergen"}')
        expect(view.locator("#result")).to_have_text("sunny in Bergen")
        view.locator("#call").click()
        expect(view.locator("#out")).to_have_text("refreshed 5")


@pytest.mark.parametrize(("tool", "said"), [
    ("secret", "the tool 'secret' has no view"),
    ("missing", "the server lists no tool 'missing'"),
])
def test_preview_of_a_tool_without_a_view_is_an_error(tool: str, said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcpsync", "apps", "preview", "tests.apps.demo_server:server",
         tool, "--port", "0"], cwd=ROOT, env=with_root_on_path(), capture_output=True,
        text=True, timeout=60)
    assert done.returncode == 1
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_preview_on_a_taken_port_says_so() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "mcpsync", "apps", "preview", "tests.apps.demo_server:server",
             "show", "city=Oslo", "--port", str(port)], cwd=ROOT, env=with_root_on_path(),
            capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"cannot serve the preview on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
