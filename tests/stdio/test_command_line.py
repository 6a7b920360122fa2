"""A stdio server's command line (issue 41): ``Client.stdio`` takes the string that
``Server.proxy`` and the ``mcpsync`` command take, split the same way by the one function
(:func:`mcpsync.transports.subprocess.command_line`), and a missing working directory is
blamed, not the command."""

from __future__ import annotations

import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from mcpsync import Client, Server
from tests.test_cli import mcpsync

SERVER = textwrap.dedent("""\
    from mcpsync import Server

    server = Server("spaced")


    @server.tool()
    def where() -> str:
        return "here"


    if __name__ == "__main__":
        server.run_stdio()
""")


@pytest.fixture
def line(tmp_path: Path) -> str:
    """A command line whose script is in a folder with a space in its name (quoted)."""
    folder = tmp_path / "a folder"
    folder.mkdir()
    (folder / "server.py").write_text(SERVER)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(folder / 'server.py'))}"


def test_client_stdio_takes_a_command_line_string(line):
    with Client.stdio(line, timeout=30) as client:
        assert client.call_tool("where", {}).text == "here"


def test_server_proxy_takes_the_same_string(line):
    front = Server("front")
    front.mount(Server.proxy(line), prefix="p")
    with Client.memory(front, timeout=30) as client:
        assert client.call_tool("p_where", {}).text == "here"


def test_the_command_takes_the_same_string(line):
    done = mcpsync("call", line, "where")
    assert (done.returncode, done.stdout.strip()) == (0, "here"), done.stderr


@pytest.mark.parametrize("bad", ["python 'server.py", "   "])
def test_a_string_that_is_no_command_line_is_refused_clearly(bad):
    with pytest.raises(ValueError, match="command line"):
        Client.stdio(bad, timeout=5)


def test_a_missing_working_directory_is_blamed_not_the_command(tmp_path, line):
    missing = tmp_path / "no-such-folder"
    with pytest.raises(FileNotFoundError) as caught:
        Client.stdio(line, cwd=missing, timeout=5)
    message = str(caught.value)
    assert f"working directory {str(missing)!r}" in message
    assert "does not exist" in message
    assert "command not found" not in message and "cannot start" not in message


def test_a_working_directory_that_is_a_file_is_blamed(tmp_path, line):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        Client.stdio(line, cwd=a_file, timeout=5)
