"""``mcpsync tools URL --auth oauth``: the CLI authorizes through a browser that comes back
to its loopback port, and keeps the tokens for the next run (real processes, a real
authorization server; the "browser" is this test following the URL the CLI prints)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import requests

from tests.helpers import LONG_WAIT as WAIT

from .authserver import AuthServer

ROOT = Path(__file__).resolve().parents[2]


def _cli(url: str, cache: Path, browser: bool) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache),
           "BROWSER": "true"}  # webbrowser runs `true URL`: no real browser opens
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpsync", "tools", url, "--auth", "oauth", "--json",
         "--protocol-version", "2025-11-25"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env, cwd=ROOT)
    err: list[str] = []
    visited: list[str] = []

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            err.append(line)
            found = re.search(r"(http://127\.0\.0\.1:\d+/authorize\S*)", line)
            if found and browser:
                visited.append(found.group(1))
                # The browser: the server approves at once and redirects to the CLI's port.
                requests.get(found.group(1), timeout=WAIT)

    # Our own readers for both pipes: communicate() would read stderr too, and could take
    # the line with the URL before read_stderr sees it.
    out: list[str] = []

    def read_stdout() -> None:
        assert process.stdout is not None
        out.append(process.stdout.read())

    readers = [threading.Thread(target=read_stderr, name="test-cli-stderr", daemon=True),
               threading.Thread(target=read_stdout, name="test-cli-stdout", daemon=True)]
    for reader in readers:
        reader.start()
    try:
        process.wait(timeout=WAIT)
    finally:
        process.kill()
        process.wait(timeout=WAIT)
    for reader in readers:
        reader.join(WAIT)
    return process.returncode, "".join(out), "".join(err)


def test_cli_authorizes_once_then_reuses_the_stored_tokens(auth_server: AuthServer,
                                                           protect: Any, tmp_path: Path):
    mcp = protect()
    code, out, err = _cli(mcp.url, tmp_path, browser=True)
    assert code == 0, err
    assert '"name"' in out  # the tool list, as JSON
    assert auth_server.count("/authorize") == 1
    token_file = tmp_path / "mcpsync" / "oauth-tokens.json"
    assert token_file.stat().st_mode & 0o077 == 0
    assert "access_token" not in err and "Bearer" not in err
    # A second run needs no browser: the stored tokens are used.
    code, out, err = _cli(mcp.url, tmp_path, browser=False)
    assert code == 0, err
    assert auth_server.count("/authorize") == 1


def test_auth_is_for_urls_only(tmp_path: Path):
    done = subprocess.run([sys.executable, "-m", "mcpsync", "tools", "python x.py", "--auth",
                           "oauth"], capture_output=True, text=True, timeout=WAIT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert done.returncode == 2
    assert "--auth applies to an http:// or https:// TARGET only" in done.stderr
