"""``mcpsync install`` into each host's configuration (in a temporary home: the
``MCPSYNC_CONFIG_HOME`` variable), read back by ``mcpsync discover``, and the servers
used as ``HOST:NAME`` targets; idempotent, backed up, a clear error for a missing host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpsync.cli import main
from mcpsync.hosts import HOME_VARIABLE, config_path
from tests.serving import ROOT

CALC = '''
from mcpsync import Server

server = Server("calc")

@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''
FOLDERS = {"claude-desktop": ".config/Claude", "claude-code": ".claude", "cursor": ".cursor",
           "vscode": ".config/Code/User"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with every host 'installed' (its folder made), and this test's
    ``mcpsync`` pointed at it."""
    home = tmp_path / "home"
    for folder in FOLDERS.values():
        (home / folder).mkdir(parents=True)
    monkeypatch.setenv(HOME_VARIABLE, str(home))
    return home


@pytest.fixture
def calc(tmp_path: Path) -> Path:
    path = tmp_path / "calc.py"
    path.write_text(CALC)
    return path


def _mcpsync(*words: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, HOME_VARIABLE: str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mcpsync", *words], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)


def test_install_into_every_host_then_discover_and_use(home: Path, calc: Path) -> None:
    """The whole path with the real command: install into each host, discover reads them
    back, and a HOST:NAME target starts the configured server."""
    for host in FOLDERS:
        done = _mcpsync("install", host, str(calc), "--env", "MODE=test", home=home)
        assert done.returncode == 0, done.stderr
        assert "added 'calc' in " in done.stderr
    found = _mcpsync("discover", "--json", home=home)
    assert found.returncode == 0, found.stderr
    listed = json.loads(found.stdout)
    assert [item["target"] for item in listed] == [f"{h}:calc" for h in FOLDERS]
    for item in listed:
        assert item["kind"] == "stdio"
        assert item["command"] == [sys.executable, "-m", "mcpsync", "run", str(calc)]
        assert item["file"] == str(config_path(item["host"], environ={HOME_VARIABLE: str(home)}))
    text = _mcpsync("discover", home=home).stdout.splitlines()
    assert text[0].startswith("claude-desktop:calc  stdio")
    called = _mcpsync("call", "cursor:calc", "add", "a=2", "b=3", home=home)
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "5"
    tools = _mcpsync("tools", "vscode:calc", home=home)
    assert tools.returncode == 0 and "add" in tools.stdout, tools.stderr


def test_what_each_host_file_holds(home: Path, calc: Path, capsys) -> None:
    for host in FOLDERS:
        assert main(["install", host, str(calc), "--name", "calc"]) == 0
    command = [sys.executable, "-m", "mcpsync", "run", str(calc)]
    desktop = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    assert desktop == {"mcpServers": {"calc": {"command": command[0], "args": command[1:]}}}
    code = json.loads((home / ".claude.json").read_text())
    assert code["mcpServers"]["calc"]["type"] == "stdio"
    cursor = json.loads((home / ".cursor/mcp.json").read_text())
    assert cursor["mcpServers"]["calc"] == {"command": command[0], "args": command[1:]}
    vscode = json.loads((home / ".config/Code/User/mcp.json").read_text())
    assert vscode == {"servers": {"calc": {"type": "stdio", "command": command[0],
                                           "args": command[1:]}}}


def test_installing_twice_changes_nothing_and_a_change_is_backed_up(
        home: Path, calc: Path, capsys) -> None:
    path = home / ".cursor/mcp.json"
    path.write_text(json.dumps({"mcpServers": {"other": {"command": "other"}},
                                "theme": "dark"}))
    assert main(["install", "cursor", str(calc)]) == 0
    first = path.read_text()
    before = path.stat().st_mtime_ns
    assert main(["install", "cursor", str(calc)]) == 0
    assert "nothing changed" in capsys.readouterr().err
    assert path.read_text() == first and path.stat().st_mtime_ns == before
    backup = path.with_name("mcp.json.bak")
    assert json.loads(backup.read_text()) == {"mcpServers": {"other": {"command": "other"}},
                                              "theme": "dark"}
    assert main(["install", "cursor", str(calc), "--env", "A=1"]) == 0
    assert "updated 'calc'" in capsys.readouterr().err
    data = json.loads(path.read_text())
    assert list(data["mcpServers"]) == ["other", "calc"] and data["theme"] == "dark"
    assert data["mcpServers"]["calc"]["env"] == {"A": "1"}
    assert json.loads(backup.read_text()) == json.loads(first)


def test_a_vscode_file_with_comments(home: Path, calc: Path, capsys) -> None:
    path = home / ".config/Code/User/mcp.json"
    path.write_text('{\n  // mine\n  "servers": {"web": {"type": "http", '
                    '"url": "https://example.com/mcp"},},\n}\n')
    assert main(["install", "vscode", str(calc)]) == 0
    err = capsys.readouterr().err
    assert "comments were not kept" in err
    assert list(json.loads(path.read_text())["servers"]) == ["web", "calc"]
    assert "// mine" in path.with_name("mcp.json.bak").read_text()


def test_a_missing_host_is_a_clear_error(tmp_path: Path, monkeypatch, calc: Path,
                                         capsys) -> None:
    monkeypatch.setenv(HOME_VARIABLE, str(tmp_path / "empty"))
    assert main(["install", "claude-desktop", str(calc)]) == 1
    err = capsys.readouterr().err
    assert "Claude Desktop does not seem to be installed here" in err
    assert "Claude" in err and "--config" in err
    assert not (tmp_path / "empty").exists()


def test_config_names_any_file(tmp_path: Path, monkeypatch, calc: Path) -> None:
    monkeypatch.setenv(HOME_VARIABLE, str(tmp_path / "empty"))
    project = tmp_path / "project" / ".cursor" / "mcp.json"
    assert main(["install", "cursor", str(calc), "--config", str(project)]) == 0
    assert list(json.loads(project.read_text())["mcpServers"]) == ["calc"]


def test_urls_commands_and_mcp_json(home: Path, capsys) -> None:
    assert main(["install", "mcp-json", "https://example.com/mcp"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "example.com": {"type": "http", "url": "https://example.com/mcp"}}
    assert main(["install", "cursor", "https://example.com/mcp", "--name", "web"]) == 0
    cursor = json.loads((home / ".cursor/mcp.json").read_text())
    assert cursor["mcpServers"]["web"] == {"url": "https://example.com/mcp"}
    # Claude Desktop runs commands only: the URL is relayed over stdio by mcpsync run
    assert main(["install", "claude-desktop", "https://example.com/mcp", "--name", "web"]) == 0
    desktop = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    assert desktop["mcpServers"]["web"]["args"] == ["-m", "mcpsync", "run",
                                                    "https://example.com/mcp"]
    assert main(["install", "vscode", "npx -y some-server --flag", "--name", "npm"]) == 0
    vscode = json.loads((home / ".config/Code/User/mcp.json").read_text())
    assert vscode["servers"]["npm"] == {"type": "stdio", "command": "npx",
                                        "args": ["-y", "some-server", "--flag"]}


@pytest.mark.parametrize(("words", "why"), [
    (["install", "cursor", "npx some-server"], "needs --name"),
    (["install", "cursor", "https://x.example/mcp", "--with", "requests"], "--with applies"),
    (["install", "cursor", "https://x.example/mcp", "--name", "bad name"],
     "can not be a server's name"),
    (["install", "cursor", "missing.py"], "no such file"),
    (["discover", "emacs"], "unknown host 'emacs'"),
])
def test_usage_errors(home: Path, words: list[str], why: str, capsys) -> None:
    status = main(words)
    assert status in (1, 2)
    assert why in capsys.readouterr().err


def test_discover_reports_an_unreadable_file_and_goes_on(home: Path, calc: Path,
                                                           capsys) -> None:
    (home / ".cursor/mcp.json").write_text("{ not json")
    assert main(["install", "vscode", str(calc)]) == 0
    capsys.readouterr()
    assert main(["discover"]) == 0
    out, err = capsys.readouterr()
    assert "vscode:calc" in out and "cursor: " in err and "not JSON" in err


def test_a_host_target_that_names_nothing(home: Path, calc: Path, capsys) -> None:
    assert main(["install", "cursor", str(calc)]) == 0
    capsys.readouterr()
    assert main(["tools", "cursor:nothing"]) == 2
    assert "Cursor has no server named 'nothing' (it has: calc" in capsys.readouterr().err


def test_each_platform_path() -> None:
    env = {"APPDATA": r"C:\Users\me\AppData\Roaming", "XDG_CONFIG_HOME": "/home/me/.xdg"}
    home = Path(os.path.expanduser("~"))
    assert config_path("claude-desktop", platform="darwin", environ=env) == (
        home / "Library/Application Support/Claude/claude_desktop_config.json")
    assert config_path("claude-desktop", platform="win32", environ=env) == (
        Path(env["APPDATA"]) / "Claude" / "claude_desktop_config.json")
    assert config_path("claude-desktop", platform="linux", environ=env) == (
        Path("/home/me/.xdg/Claude/claude_desktop_config.json"))
    assert config_path("vscode", platform="darwin", environ=env) == (
        home / "Library/Application Support/Code/User/mcp.json")
    assert config_path("vscode", platform="win32", environ=env) == (
        Path(env["APPDATA"]) / "Code" / "User" / "mcp.json")
    assert config_path("vscode", platform="linux", environ={}) == (
        home / ".config/Code/User/mcp.json")
    for platform in ("darwin", "win32", "linux"):
        assert config_path("cursor", platform=platform, environ=env) == home / ".cursor/mcp.json"
        assert config_path("claude-code", platform=platform, environ=env) == home / ".claude.json"
    moved = {**env, HOME_VARIABLE: "/tmp/h"}
    assert config_path("vscode", platform="win32", environ=moved) == Path(
        "/tmp/h/AppData/Roaming/Code/User/mcp.json")


def test_run_host_name_serves_the_configured_command_over_stdio(home: Path,
                                                                 calc: Path) -> None:
    """``mcpsync run cursor:calc`` is what a host that launches only commands would run:
    the configured server, on this process's stdin and stdout."""
    from mcpsync import Client

    assert main(["install", "cursor", str(calc)]) == 0
    command = [sys.executable, "-m", "mcpsync", "run", "cursor:calc"]
    with Client.stdio(command, env={HOME_VARIABLE: str(home), "PYTHONPATH": str(ROOT)},
                      timeout=60) as client:
        assert client.call_tool("add", {"a": 20, "b": 22}).structured_content == {
            "result": 42}


FAKE_CLAUDE = '''#!{python}
"""A stand-in for Claude Code's ``claude`` program (not installed here): ``mcp add-json
--scope user NAME JSON`` and ``mcp remove --scope user NAME`` change ~/.claude.json as
the real one does, and every call is recorded."""
import json, os, sys
home = os.environ["HOME"]
with open(os.path.join(home, "claude-calls.log"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
path = os.path.join(home, ".claude.json")
data = json.load(open(path)) if os.path.exists(path) else {{}}
words = sys.argv[1:]
if words[:2] == ["mcp", "add-json"] and words[2:4] == ["--scope", "user"]:
    if words[4] in data.get("mcpServers", {{}}):
        sys.exit("MCP server " + words[4] + " already exists in user config")
    data.setdefault("mcpServers", {{}})[words[4]] = json.loads(words[5])
elif words[:2] == ["mcp", "remove"] and words[2:4] == ["--scope", "user"]:
    del data["mcpServers"][words[4]]
else:
    sys.exit("unknown command")
json.dump(data, open(path, "w"))
'''


def test_claude_code_is_configured_through_its_command(tmp_path: Path, monkeypatch,
                                                         calc: Path, capsys) -> None:
    """With ``claude`` on PATH (and the configuration not moved), the entry goes through
    ``claude mcp add-json --scope user``; the same entry again runs nothing; a changed
    one is removed, then added."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=sys.executable))
    claude.chmod(0o755)
    monkeypatch.delenv(HOME_VARIABLE, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert main(["install", "claude-code", str(calc)]) == 0
    assert main(["install", "claude-code", str(calc)]) == 0
    assert main(["install", "claude-code", str(calc), "--env", "A=1"]) == 0
    calls = [json.loads(line) for line in (home / "claude-calls.log").read_text().splitlines()]
    assert [call[:5] for call in calls] == [
        ["mcp", "add-json", "--scope", "user", "calc"],
        ["mcp", "remove", "--scope", "user", "calc"],
        ["mcp", "add-json", "--scope", "user", "calc"]]
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["calc"]
    assert entry["type"] == "stdio" and entry["env"] == {"A": "1"}
    err = capsys.readouterr().err
    assert "nothing changed" in err and "updated 'calc'" in err


def test_a_configured_url_is_reached_with_its_headers(home: Path, capsys) -> None:
    """``HOST:NAME`` of an HTTP entry: its URL, with the entry's headers (variables
    expanded) on every request."""
    from tests.hub.servers import build_notes
    from tests.serving import RunningServer

    seen: list[str | None] = []
    app = build_notes().wsgi_app(path="/mcp")

    def recording(environ: dict, start_response):  # the WSGI app, seeing each request
        seen.append(environ.get("HTTP_X_TEAM"))
        return app(environ, start_response)

    with RunningServer(recording, on_stop=app.close) as running:
        (home / ".cursor/mcp.json").write_text(json.dumps({"mcpServers": {"notes": {
            "url": running.base + "/mcp", "headers": {"X-Team": "${TEAM:-blue}"}}}}))
        assert main(["tools", "cursor:notes"]) == 0
    assert "add" in capsys.readouterr().out
    assert seen and set(seen) == {"blue"}


@pytest.mark.parametrize("line", ["python 'my server.py' --flag", "uv run \"a b\" c\\ d"])
def test_a_command_line_is_split_as_client_stdio_splits_it(line: str) -> None:
    # One reading of a command line for Client.stdio, Server.proxy, the CLI and install:
    # the entry a host gets runs the very argument list mcpsync would run.
    from mcpsync.hosts.install import server_entry
    from mcpsync.transports.subprocess import command_line

    words = command_line(line)
    entry = server_entry(None, line)
    assert [entry["command"], *entry["args"]] == words


def test_a_command_line_that_cannot_be_split_says_so_as_client_stdio_does(home: Path,
                                                                            capsys) -> None:
    from mcpsync.transports.subprocess import command_line

    line = "python 'unclosed.py"
    with pytest.raises(ValueError) as caught:
        command_line(line)
    assert main(["install", "cursor", line, "--name", "x"]) in (1, 2)
    assert str(caught.value) in capsys.readouterr().err
