"""The rough edges a newcomer met in the ``mcpsync`` command (issue 28), through the real
command as a subprocess: stdout carries only the command's own output (an in-process
server's prints go to stderr, as over stdio), errors say what happened in words (a refused
connection, a program that is not an MCP server, a task store in a missing folder, a log
line without a logger), and every option of every subcommand has help text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from tests.test_cli import assert_usage_error, mcpsync, mcpsync_in_process

NOISY = textwrap.dedent("""\
    import contextlib
    import os
    import sys

    from mcpsync import Server

    print("startup! (the module body)")
    os.system("echo startup! from a child process")


    @contextlib.contextmanager
    def lifespan(server):
        print("startup! (the lifespan)")
        yield {}
        print("shutdown! (the lifespan)")


    server = Server("noisy", lifespan=lifespan)


    @server.tool()
    def add(a: int, b: int = 0) -> int:
        print("adding (the tool)")
        sys.stdout.flush()
        os.system("echo adding from a child process")
        return a + b
""")


@pytest.fixture
def noisy(tmp_path: Path) -> Path:
    (tmp_path / "noisy.py").write_text(NOISY)
    return tmp_path


@pytest.mark.parametrize("target", ["noisy.py:server", "noisy:server", "noisy.py"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_in_process_servers_prints_go_to_stderr_for_tools(noisy, target, as_json):
    done = mcpsync("tools", target, *(["--json"] if as_json else []), cwd=noisy)
    assert done.returncode == 0, done.stderr
    assert "startup!" not in done.stdout and "shutdown!" not in done.stdout
    if as_json:
        assert [tool["name"] for tool in json.loads(done.stdout)] == ["add"]
    else:
        assert done.stdout.startswith("add(")
    for line in ("startup! (the module body)", "startup! from a child process",
                 "startup! (the lifespan)", "shutdown! (the lifespan)"):
        assert line in done.stderr


@pytest.mark.parametrize("target", ["noisy.py:server", "noisy:server"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_in_process_servers_prints_go_to_stderr_for_call(noisy, target, as_json):
    done = mcpsync("call", target, "add", '{"a": 1}', *(["--json"] if as_json else []),
                   cwd=noisy)
    assert done.returncode == 0, done.stderr
    if as_json:
        assert json.loads(done.stdout)["structuredContent"] == {"result": 1}
    else:
        assert done.stdout == "1\n"
    for line in ("startup! (the lifespan)", "adding (the tool)",
                 "adding from a child process", "shutdown! (the lifespan)"):
        assert line in done.stderr


# -- errors in words ---------------------------------------------------------------------


def test_a_refused_connection_says_so_on_the_command_line():
    done = mcpsync_in_process("tools", "http://127.0.0.1:1/mcp", "--timeout", "5")
    assert done.returncode == 1, done.stderr
    assert done.stderr == "mcpsync: cannot connect to http://127.0.0.1:1/mcp: connection refused\n"


def test_a_refused_connection_quotes_no_password():
    done = mcpsync_in_process("tools", "http://user:hunter2@127.0.0.1:1/mcp", "--timeout", "5")
    assert done.stderr == "mcpsync: cannot connect to http://127.0.0.1:1/mcp: connection refused\n"


@pytest.mark.parametrize("version", ["auto", "2026-07-28", "2025-11-25"])
def test_a_refused_connection_says_so_to_a_client(version):
    from mcpsync import Client, ConnectionClosedError

    with pytest.raises(ConnectionClosedError) as caught:
        Client.http("http://127.0.0.1:1/mcp?api_key=SECRET", protocol_version=version,
                    timeout=5)
    text = str(caught.value)
    assert text.startswith("cannot connect to http://127.0.0.1:1/mcp"), text
    assert text.endswith(": connection refused"), text
    assert "SECRET" not in text and "Max retries" not in text


def test_a_program_that_echoes_its_input_is_not_an_mcp_server():
    done = mcpsync("tools", "cat", "--timeout", "10")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("mcpsync: `cat` is not an MCP server: "), done.stderr
    assert "Method not found: initialize" not in done.stderr.splitlines()[0][:40]


@pytest.mark.skipif(shutil.which("echo") is None, reason="no echo program")
@pytest.mark.parametrize("command", [("tools",), ("inspect",), ("call", "x")])
def test_a_program_that_prints_and_exits_is_not_an_mcp_server(command):
    """``echo hello`` is gone before initialize is written: that used to read "stream is
    closed" or "I/O operation on closed file", depending on which thread saw it first."""
    for _ in range(3):  # a race: more than one run
        done = mcpsync(command[0], "echo hello", *command[1:], "--timeout", "10")
        assert done.returncode == 1, done.stderr
        assert done.stderr == ("mcpsync: `echo hello` is not an MCP server: it wrote 'hello' "
                               "on stdout (not a JSON-RPC message), then exited with status "
                               "0\n"), done.stderr


def test_a_dying_servers_stderr_is_shown_once(tmp_path):
    """The lines come as they are written (``[dies.py] ...``); the report after them says
    how it ended and does not repeat them."""
    (tmp_path / "dies.py").write_text("import sys\nprint('the one line', file=sys.stderr)\n"
                                      "sys.exit(4)\n")
    done = mcpsync("tools", f"{sys.executable} dies.py", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("the one line") == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"[{os.path.basename(sys.executable)} dies.py] the one line",
        "mcpsync: the stdio server exited with status 4 while waiting for initialize",
        f"  command: {sys.executable} dies.py",
        "  (its stderr is above)"]


def test_a_task_store_in_a_missing_folder_names_the_folder(tmp_path):
    from mcpsync.tasks.sqlite import SqliteTaskStore

    missing = tmp_path / "no" / "such" / "folder"
    with pytest.raises(FileNotFoundError) as caught:
        SqliteTaskStore(missing / "tasks.db")
    assert str(missing) in str(caught.value)
    assert "no such directory" in str(caught.value)
    assert not missing.exists()


def test_a_task_store_in_a_missing_folder_is_a_usage_error_naming_it(tmp_path):
    (tmp_path / "good.py").write_text("from mcpsync import Server\nserver = Server('g')\n")
    missing = tmp_path / "nowhere"
    done = mcpsync("run", "good.py:server", "--task-store", str(missing / "tasks.db"),
                   cwd=tmp_path)
    assert_usage_error(done, str(missing), "no such directory")


@pytest.mark.parametrize(("logger", "expected"), [
    (None, "[warning] plain words"),
    ("db", "[warning] db: plain words"),
])
def test_a_log_line_without_a_logger_has_no_stray_colon(logger, expected):
    import io

    from mcpsync.cli.output import Reporter
    from mcpsync.types.common import LogMessage

    stream = io.StringIO()
    Reporter("tool", stream).log(LogMessage(
        level="warning", data="plain words", logger=logger))
    assert stream.getvalue() == expected + "\n"


def test_a_log_line_without_a_logger_through_the_command(tmp_path):
    (tmp_path / "logs.py").write_text(textwrap.dedent("""\
        from mcpsync import HandlerContext, Server

        server = Server("logs")


        @server.tool()
        def speak(ctx: HandlerContext) -> str:
            ctx.log("warning", "plain words")
            return "spoken"
    """))
    done = mcpsync("call", "logs.py:server", "speak", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[warning] plain words" in done.stderr.splitlines(), done.stderr


# -- help for every option -----------------------------------------------------------------

SUBCOMMANDS = ["run", "serve", "tools", "call", "resources", "read", "prompts", "prompt",
               "inspect"]


def option_entries(help_text: str) -> dict[str, str]:
    """``{option: its help}`` from argparse's "options:" section."""
    section = help_text.split("\noptions:\n", 1)[1]
    entries: dict[str, str] = {}
    current = None
    for line in section.splitlines():
        if re.match(r"^  -", line):
            # "  --host HOST   its help", or the flags alone (the help on the next line).
            flags, _, text = (line.strip() + "  ").partition("  ")
            current = re.findall(r"--?[\w-]+", flags)[-1]
            entries[current] = text.strip()
        elif current is not None and line.startswith(" " * 8) and line.strip():
            entries[current] += " " + line.strip()
        elif not line.strip():
            current = None
    return entries


def test_the_parser_sees_every_option():
    entries = option_entries(mcpsync_in_process("serve", "--help").stdout)
    assert {"--help", "--host", "--port", "--path", "--timeout"} <= set(entries)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_option_has_help_text(command):
    done = mcpsync_in_process(command, "--help")
    assert done.returncode == 0, done.stderr
    entries = option_entries(done.stdout)
    assert len(entries) > 1
    bare = sorted(option for option, text in entries.items() if not text.strip())
    assert not bare, f"mcpsync {command}: no help for {bare}"


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_positional_argument_has_help_text(command):
    done = mcpsync_in_process(command, "--help")
    section = done.stdout.split("\npositional arguments:\n", 1)[1].split("\n\n", 1)[0]
    for line in section.splitlines():
        if re.match(r"^  \w", line):
            assert re.match(r"^  \S+\s{2,}\S", line), f"mcpsync {command}: {line!r}"


def test_run_keeps_the_module_bodys_prints_off_the_protocol_stream(noisy):
    """``mcpsync run FILE:OBJ`` speaks MCP on stdout: a print while the file is imported
    (before serving starts) must not land there either."""
    done = mcpsync("run", "noisy.py:server", cwd=noisy)  # stdin at EOF: serve, then stop
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    for line in ("startup! (the module body)", "startup! from a child process",
                 "startup! (the lifespan)", "shutdown! (the lifespan)"):
        assert line in done.stderr
