"""The ``mcpsync`` command, run as a real subprocess (``python -m mcpsync``).

A TARGET or SERVER that can not be used is one line on stderr and exit status 2: never a
traceback, never a silent attempt to run the text as a command. A stdio server that dies
is reported with its command, exit status and last stderr lines.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import LONG_WAIT as WAIT

ROOT = Path(__file__).resolve().parents[1]


def mcpsync(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mcpsync", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=WAIT, stdin=subprocess.DEVNULL)


def mcpsync_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``mcpsync ARGS`` run in this process (``mcpsync.cli.main.main``), its stdout and
    stderr captured: for the tests of what the command prints and returns, where the
    subprocess itself is not what is tested (a subprocess costs an interpreter start and
    mcpsync's import, each time). Not for ``run``/``serve`` (they serve until stopped), nor
    for what depends on the process (signals, exit codes of a crash, the environment)."""
    import contextlib
    import io

    from mcpsync.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    # A FILE:OBJ target puts the file's folder first on sys.path, as `python FILE` does, for
    # the life of the process: here that is the test run's, where tests/ first on the path
    # made tests/django shadow Django for every later test on this worker. So the path is
    # given back as it was, as the process would have taken it with it.
    path = list(sys.path)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.path[:] = path
    return subprocess.CompletedProcess(["mcpsync", *args], code, out.getvalue(),
                                       err.getvalue())


def assert_usage_error(done: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("mcpsync: ")
    for phrase in phrases:
        assert phrase in lines[0]
    assert done.stdout == ""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with a good server file, a helper that is not a Server, and broken files."""
    (tmp_path / "good.py").write_text(textwrap.dedent("""\
        from mcpsync import Server

        server = Server("good")
        helper = "not a server"

        def make_other():
            return 42

        def make_failing():
            raise RuntimeError("the factory failed")

        @server.tool()
        def add(a: int, b: int) -> int:
            return a + b
    """))
    (tmp_path / "raises.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "syntax.py").write_text("def broken(:\n")
    (tmp_path / "dies.py").write_text(textwrap.dedent("""\
        import sys
        print("dies.py: about to fail", file=sys.stderr)
        import mcpsync_no_such_module_for_the_cli_test
    """))
    return tmp_path


COMMANDS = [("tools",), ("call", "-", "add")]  # "-" is replaced by the target


def run_with(command: tuple[str, ...], target: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if command[0] == "tools":
        return mcpsync("tools", target, cwd=cwd)
    return mcpsync("call", target, "add", '{"a": 1, "b": 2}', cwd=cwd)


@pytest.mark.parametrize("command", COMMANDS, ids=["tools", "call"])
def test_missing_file(project, command):
    assert_usage_error(run_with(command, "nope.py:server", project), "no such file: nope.py")


@pytest.mark.parametrize("command", COMMANDS, ids=["tools", "call"])
def test_file_without_the_object(project, command):
    assert_usage_error(run_with(command, "good.py:missing", project),
                       "good.py has no attribute 'missing'", "it has: server")


@pytest.mark.parametrize("command", COMMANDS, ids=["tools", "call"])
def test_object_that_is_not_a_server(project, command):
    assert_usage_error(run_with(command, "good.py:helper", project), "is a str, not a")


def test_factory_that_returns_something_else(project):
    assert_usage_error(mcpsync("tools", "good.py:make_other", cwd=project),
                       "returned an int, not a")


def test_factory_that_raises(project):
    assert_usage_error(mcpsync("tools", "good.py:make_failing", cwd=project),
                       "RuntimeError: the factory failed", "line 10")


def test_module_that_raises_at_import(project):
    assert_usage_error(mcpsync("tools", "raises.py:server", cwd=project),
                       "importing raises.py failed: RuntimeError: boom at import", "line 1")


def test_module_with_a_syntax_error(project):
    assert_usage_error(mcpsync("tools", "syntax.py:server", cwd=project), "SyntaxError")


def test_missing_module(project):
    assert_usage_error(mcpsync("tools", "no_such_module_xyz:server", cwd=project),
                       "no module named 'no_such_module_xyz'")


@pytest.mark.parametrize("command", COMMANDS, ids=["tools", "call"])
def test_text_without_a_colon_is_not_run_as_a_command(project, command):
    assert_usage_error(run_with(command, "weather_thing", project),
                       "'weather_thing' is neither a command on PATH nor MODULE_OR_FILE:OBJ",
                       "weather_thing:server")


def test_a_command_line_whose_program_is_missing(project):
    assert_usage_error(mcpsync("tools", "mcpsync-no-such-program-xyz --stdio", cwd=project),
                       "stdio server command not found", "mcpsync-no-such-program-xyz")


def test_a_plain_py_file_without_a_colon_is_loaded_and_says_so(project):
    done = mcpsync("call", "good.py", "add", '{"a": 1, "b": 2}', "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"] == {"result": 3}
    assert done.stderr.strip() == ('mcpsync: loading good.py:server in this process (to run '
                                   'it as a command instead, write "python good.py")')


def test_an_executable_py_file_without_a_colon_is_run_and_says_so(project):
    script = project / "exe.py"
    script.write_text(f"#!{sys.executable}\n" + (project / "good.py").read_text()
                      + "\nif __name__ == '__main__':\n    server.run_stdio()\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    done = mcpsync("tools", "./exe.py", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)] == ["add"]
    assert "mcpsync: running ./exe.py as a command" in done.stderr


def test_a_good_in_process_target(project):
    done = mcpsync("tools", "good.py:server", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)] == ["add"]


def test_a_server_that_dies_at_start_is_reported_with_status_command_and_stderr(project):
    done = mcpsync("tools", f"{sys.executable} dies.py", cwd=project)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr  # the server's, quoted
    # The server's own stderr lines are shown as they come, prefixed (issue 28); the
    # CLI's report is the first line of its own.
    echoed = f"[{os.path.basename(sys.executable)} dies.py] "
    first = next(line for line in done.stderr.splitlines() if not line.startswith(echoed))
    assert first == ("mcpsync: the stdio server exited with status 1 while waiting for "
                     "initialize")
    assert f"command: {sys.executable} dies.py" in done.stderr
    assert "dies.py: about to fail" in done.stderr
    assert ("ModuleNotFoundError: No module named 'mcpsync_no_such_module_for_the_cli_test'"
            in done.stderr)


@pytest.mark.parametrize("server", ["nope.py:server", "good.py:helper", "python good.py",
                                    "good.py:missing", "raises.py:server"])
def test_run_rejects_what_is_not_a_server(project, server):
    done = mcpsync("run", server, cwd=project)
    assert_usage_error(done)


def test_serve_rejects_what_is_not_a_server(project):
    assert_usage_error(mcpsync("serve", "good.py:helper", "--port", "0", cwd=project),
                       "is a str, not a")


@pytest.mark.parametrize("port", ["99999", "-1", "65536", "http"])
def test_serve_rejects_a_port_out_of_range(project, port):
    done = mcpsync("serve", "good.py:server", "--port", port, cwd=project)
    assert_usage_error(done, "--port", "0..65535", "see mcpsync serve --help")


# -- --task-store ------------------------------------------------------------------------

TASKY = """\
from mcpsync import Server

server = Server("tasky")


@server.tool()
def store() -> str:
    held = getattr(server, "task_store", None)
    return f"{type(held).__name__} {getattr(held, 'path', '-')}"
"""


def test_run_with_a_task_store_keeps_tasks_in_that_file(project):
    (project / "tasky.py").write_text(TASKY)
    command = f"{sys.executable} -m mcpsync run tasky.py:server --task-store tasks.db"
    done = mcpsync("call", command, "store", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    text = json.loads(done.stdout)["content"][0]["text"]
    assert text == "SqliteTaskStore tasks.db"
    assert (project / "tasks.db").is_file()


def test_serve_with_a_task_store_keeps_tasks_in_that_file(project):
    from mcpsync import Client
    from tests.serving import free_port, serving_process

    (project / "tasky.py").write_text(TASKY)
    port = free_port()
    db = project / "state" / "tasks.db"
    db.parent.mkdir()
    argv = [sys.executable, "-m", "mcpsync", "serve", "tasky.py:server", "--port", str(port),
            "--task-store", str(db)]
    with serving_process(argv, port, cwd=project, env=dict(os.environ, PYTHONPATH=str(ROOT))
                         ) as base, Client.http(f"{base}/mcp", timeout=WAIT) as client:
        result = client.call_tool("store", {})
    assert result.content[0].text == f"SqliteTaskStore {db}"  # type: ignore[union-attr]
    assert db.is_file()


def test_without_a_task_store_flag_nothing_is_set(project):
    (project / "tasky.py").write_text(TASKY)
    command = f"{sys.executable} -m mcpsync run tasky.py:server"
    done = mcpsync("call", command, "store", cwd=project)
    assert done.returncode == 0, done.stderr
    assert not list(project.glob("*.db"))


@pytest.mark.parametrize("command", ["run", "serve"])
@pytest.mark.parametrize("where", ["missing/dir/tasks.db", "notes.txt", "."])
def test_a_task_store_that_can_not_be_used_is_a_usage_error(project, command, where):
    (project / "notes.txt").write_text("not a database\n" * 200)
    done = mcpsync(command, "good.py:server", "--task-store", where, cwd=project)
    assert_usage_error(done, f"cannot use {where!r} as the task store")


# -- HTTP targets, output, help ------------------------------------------------------------

CHATTY = """\
from mcpsync import HandlerContext, Server, ToolError

server = Server("chatty")


@server.tool()
def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


@server.tool()
def work(ctx: HandlerContext, steps: int = 3) -> str:
    \"\"\"Report progress and log at two levels.\"\"\"
    for i in range(1, steps + 1):
        ctx.log("debug", f"detail {i}", logger="work")
        ctx.progress(i, total=steps, message=f"step {i}")
    ctx.log("warning", "almost done", logger="work")
    return "worked"


@server.tool(description="Sneaky\\x1b]0;pwned\\x07 description")
def sneaky() -> str:
    return "\\x1b[31mred\\x1b[0m"


@server.tool()
def fails() -> str:
    raise ToolError("it broke")
"""


@pytest.fixture
def http_server(project: Path):
    """The CHATTY server on a real socket; ``.url`` and ``.seen`` (each request's headers)."""
    import importlib.util

    from tests.serving import RunningServer

    path = project / "chatty.py"
    path.write_text(CHATTY)
    module_spec = importlib.util.spec_from_file_location("cli_chatty", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    app = module.server.wsgi_app(path="/mcp")
    seen: list[dict[str, str]] = []

    def recording(environ, start_response):
        seen.append({k[5:].replace("_", "-").lower(): v for k, v in environ.items()
                     if k.startswith("HTTP_")})
        return app(environ, start_response)

    with RunningServer(recording, on_stop=app.close) as running:
        running.url = running.base + "/mcp"  # type: ignore[attr-defined]
        running.seen = seen  # type: ignore[attr-defined]
        yield running


VERSIONS = ["2026-07-28", "2025-11-25", "auto"]


@pytest.mark.parametrize("version", VERSIONS)
def test_tools_over_http_with_headers_and_a_protocol_version(http_server, version):
    done = mcpsync("tools", http_server.url, "--header", "X-Token: abc:def",
                   "--header", "X-Other:1", "--protocol-version", version, "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(t["name"] for t in json.loads(done.stdout)) == [
        "add", "fails", "sneaky", "work"]
    assert http_server.seen and all(h.get("x-token") == "abc:def" and h.get("x-other") == "1"
                                    for h in http_server.seen)
    sent = {h.get("mcp-protocol-version") for h in http_server.seen} - {None}
    assert sent == ({"2026-07-28"} if version != "2025-11-25" else {"2025-11-25"})


@pytest.mark.parametrize("version", VERSIONS)
def test_call_over_http_prints_the_result_and_reports_logs_and_progress(http_server,
                                                                          version):
    done = mcpsync("call", http_server.url, "work", '{"steps": 2}',
                   "--protocol-version", version)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "worked\n"
    lines = done.stderr.splitlines()
    assert lines == ["[debug] work: detail 1", "progress: 1/2 step 1",
                     "[debug] work: detail 2", "progress: 2/2 step 2",
                     "[warning] work: almost done"]


@pytest.mark.parametrize("target", ["http", "stdio", "memory"])
def test_call_with_a_log_level_shows_only_that_level_and_above(http_server, project, target):
    where = {"http": http_server.url, "stdio": f"{sys.executable} chatty.py",
             "memory": "chatty.py:server"}[target]
    if target == "stdio":
        (project / "chatty.py").write_text(CHATTY + "\nserver.run_stdio()\n")
    done = mcpsync("call", where, "work", "--log-level", "warning", cwd=project)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("[")] == [
        "[warning] work: almost done"]


def test_json_output_of_a_call_is_the_wire_result(http_server):
    done = mcpsync("call", http_server.url, "add", '{"a": 2, "b": 3}', "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"] == {"result": 5}


def test_human_output_lists_tools_with_parameters_and_descriptions(http_server):
    done = mcpsync("tools", http_server.url)
    assert done.returncode == 0, done.stderr
    assert "add(a*: integer, b*: integer)\n    Add two numbers.\n" in done.stdout
    assert "work(steps: integer)" in done.stdout


def test_terminal_control_characters_from_the_server_are_made_visible(http_server):
    done = mcpsync("tools", http_server.url)
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "Sneaky\\x1b]0;pwned\\x07 description" in done.stdout
    done = mcpsync("call", http_server.url, "sneaky")
    assert done.stdout == "\\x1b[31mred\\x1b[0m\n"


def test_a_tool_error_exits_1_with_its_text(http_server):
    done = mcpsync("call", http_server.url, "fails")
    assert done.returncode == 1
    assert "it broke" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "mcpsync: the tool 'fails' reported an error"


def test_an_unreachable_url_is_one_line_and_exit_1():
    from tests.serving import free_port

    done = mcpsync("tools", f"http://127.0.0.1:{free_port()}/mcp", "--timeout", "5")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("mcpsync: ")


@pytest.mark.parametrize(("args", "phrase"), [
    (("--header", "no colon here"), "is not NAME:VALUE"),
    (("--header", "Bad Name: x"), "is not NAME:VALUE"),
    (("--protocol-version", "1999-01-01"), "is not one of 2026-07-28"),
    (("--timeout", "0"), "is not a positive number of seconds"),
])
def test_bad_options_are_one_line_usage_errors(args, phrase):
    assert_usage_error(mcpsync("tools", "http://127.0.0.1:9/mcp", *args), phrase)


def test_a_header_for_a_target_that_is_not_a_url_is_a_usage_error(project):
    assert_usage_error(mcpsync("tools", "good.py:server", "--header", "A: b", cwd=project),
                       "--header applies to an http:// or https:// TARGET only")


def test_version():
    from mcpsync import __version__

    done = mcpsync("--version")
    assert done.returncode == 0
    assert done.stdout == f"mcpsync {__version__}\n"


@pytest.mark.parametrize("command", [(), ("tools",), ("call",), ("serve",), ("run",),
                                     ("resources",), ("read",), ("prompts",), ("prompt",),
                                     ("inspect",)])
def test_help_has_no_rest_markup(command):
    done = mcpsync(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert "``" not in done.stdout and ":class:" not in done.stdout
    assert "usage: mcpsync" in done.stdout


def test_a_missing_argument_is_one_line():
    assert_usage_error(mcpsync("call"), "the following arguments are required")


# -- run URL: an HTTP server relayed over stdio ---------------------------------------------


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_run_relays_an_http_server_over_stdio(http_server, version):
    from mcpsync import Client

    logs = []
    command = [sys.executable, "-m", "mcpsync", "run", http_server.url,
               "--header", "X-Token: relay"]
    with Client.stdio(command, env={"PYTHONPATH": str(ROOT)}, protocol_version=version,
                      timeout=WAIT, on_log=logs.append) as client:
        assert client.protocol_version == version
        assert sorted(t.name for t in client.list_tools()) == ["add", "fails", "sneaky", "work"]
        steps = []
        assert client.call_tool("work", {"steps": 2}, on_progress=steps.append).text == "worked"
        assert [s.progress for s in steps] == [1, 2]
        assert client.call_tool("add", {"a": 2, "b": 2}).structured_content == {"result": 4}
    assert [m.data for m in logs] == ["detail 1", "detail 2", "almost done"]
    assert all(h.get("x-token") == "relay" for h in http_server.seen)


def test_run_answers_each_request_with_an_error_when_the_url_is_unreachable():
    from mcpsync import Client, MCPError
    from tests.serving import free_port

    command = [sys.executable, "-m", "mcpsync", "run", f"http://127.0.0.1:{free_port()}/mcp"]
    with pytest.raises(MCPError, match="could not be reached"):
        Client.stdio(command, env={"PYTHONPATH": str(ROOT)}, timeout=WAIT)


def test_run_with_a_header_for_a_server_file_is_a_usage_error(project):
    assert_usage_error(mcpsync("run", "good.py:server", "--header", "A: b", cwd=project),
                       "--header applies to an http:// or https:// URL only")


def test_run_with_a_timeout_for_a_server_file_is_a_usage_error(project):
    # --timeout bounds a relayed request's HTTP exchange: a server run here has none.
    assert_usage_error(mcpsync("run", "good.py:server", "--timeout", "5", cwd=project),
                       "--timeout applies to an http:// or https:// URL only")
    assert_usage_error(mcpsync("run", "http://127.0.0.1:9/mcp", "--timeout", "0"),
                       "is not a positive number of seconds")


def test_a_py_files_one_server_not_called_server_is_named_in_the_notice(project):
    # The notice says which object is served: the module's one Server, named calc.
    (project / "calc.py").write_text((project / "good.py").read_text()
                                     .replace("server", "calc"))
    done = mcpsync("tools", "calc.py", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)] == ["add"]
    assert done.stderr.strip() == ('mcpsync: loading calc.py:calc in this process (to run '
                                   'it as a command instead, write "python calc.py")')
