"""A stdio server's stderr is visible without any setup (issue 28): while the application
has configured no logging handler, its lines reach this process's stderr (a notebook's
cell output), prefixed with the server's script; once logging is configured, it alone shows
them, never both.

Each case is a real program (a subprocess, so that pytest's own logging handlers are not
there) talking to a real stdio server that writes to its stderr."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import LONG_WAIT as WAIT

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "server" / "fixture_server.py"
ENV = {"PYTHONPATH": str(ROOT)}
PREFIX = f"[{os.path.basename(sys.executable)} fixture_server.py] "


def run_caller(tmp_path: Path, before: str = "", after_connect: str = "") -> str:
    """A program that calls the fixture's ``chatty`` tool (it prints "explicit stderr" to
    its stderr) over stdio; returns the program's own stderr."""
    caller = tmp_path / "caller.py"
    caller.write_text(textwrap.dedent(before) + textwrap.dedent(f"""
        import sys
        from mcpsync import Client

        with Client.stdio([sys.executable, {str(FIXTURE)!r}], env={ENV!r}) as client:
        """) + textwrap.indent(textwrap.dedent(after_connect), "    ")
        + "\n    client.call_tool('chatty')\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(caller)], capture_output=True, text=True,
                          env=dict(os.environ, **ENV), timeout=WAIT)
    assert done.returncode == 0, done.stderr
    return done.stderr


def lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def test_without_logging_configured_the_lines_reach_stderr_once(tmp_path):
    err = run_caller(tmp_path)
    assert lines_with(err, "explicit stderr") == [PREFIX + "explicit stderr"]


@pytest.mark.parametrize("when", ["before", "after_connect"])
def test_with_logging_configured_only_logging_shows_them(tmp_path, when):
    """Configured before connecting or while the server runs: one line, the log record."""
    setup = """
        import logging
        logging.basicConfig(level=logging.INFO, format="LOG %(name)s %(message)s")
    """
    err = run_caller(tmp_path, **{when: setup})
    shown = lines_with(err, "explicit stderr")
    assert len(shown) == 1, err
    assert shown[0].startswith("LOG mcpsync.server_stderr [") and PREFIX not in shown[0]


def test_logging_configured_to_hide_info_hides_them(tmp_path):
    """The application's configuration is obeyed: WARNING and up means no server lines."""
    err = run_caller(tmp_path, before="""
        import logging
        logging.basicConfig(level=logging.WARNING)
    """)
    assert lines_with(err, "explicit stderr") == []


def test_a_notebook_stderr_without_a_file_descriptor_gets_them(tmp_path):
    """Jupyter's ``sys.stderr`` is a stream object with no ``fileno()``: the lines go to
    whatever ``sys.stderr`` is when they arrive."""
    err = run_caller(tmp_path, before="""
        import io, sys
        real_stderr, sys.stderr = sys.stderr, io.StringIO()
        import atexit
        atexit.register(lambda: real_stderr.write("CELL:" + sys.stderr.getvalue()))
    """)
    direct, _, cell = err.partition("CELL:")
    assert lines_with(cell, "explicit stderr") == [PREFIX + "explicit stderr"]
    assert lines_with(direct, "explicit stderr") == []


def test_the_label_names_the_script_or_module_never_later_arguments():
    from mcpsync.transports.subprocess import server_label

    assert server_label(["/usr/bin/python3", "/srv/weather/server.py", "--token", "x"]) == (
        "python3 server.py")
    assert server_label(["python", "-m", "weather.server", "--key=s"]) == (
        "python -m weather.server")
    assert server_label(["uvx", "--from", "x", "srv"]) == "uvx"
    assert server_label(["/opt/bin/weather-server"]) == "weather-server"
