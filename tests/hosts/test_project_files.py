"""Project-level host files (issue 41): ``mcpsync discover`` and ``HOST:NAME`` also read
Claude Code's ``.mcp.json``, Cursor's ``.cursor/mcp.json`` and VS Code's
``.vscode/mcp.json`` from the current directory up to the repository root, nearest first,
before the user-level file; and ``mcpsync install --header`` for HTTP entries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcpsync.cli import main
from mcpsync.hosts import HOME_VARIABLE, project_folders
from tests.hosts.test_install import CALC


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _stdio(*args: str) -> dict:
    return {"command": sys.executable, "args": ["-m", "mcpsync", "run", *args]}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/outside/repo`` (a repository: it holds ``.git``) with a calc server at its
    root, an empty home for the user-level files, and the current directory two levels
    down in the repository."""
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    monkeypatch.setenv(HOME_VARIABLE, str(home))
    repo = tmp_path / "outside" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    deep = repo / "pkg" / "sub"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    return repo


def _discovered(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    capsys.readouterr()
    assert main(["discover", "--json"]) == 0
    listed: list[dict] = json.loads(capsys.readouterr().out)
    return listed


def test_each_hosts_project_file_is_read_up_to_the_repository_root(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(repo / ".mcp.json", {"mcpServers": {"team": _stdio("calc.py")}})
    _write(repo / ".cursor/mcp.json", {"mcpServers": {"docs": {"url": "https://d.example/mcp"}}})
    _write(repo / "pkg/sub/.vscode/mcp.json",
           {"servers": {"near": {"type": "stdio", "command": "near-server"}}})
    # Above the repository root: another project's file, never read from here.
    _write(repo.parent / ".mcp.json", {"mcpServers": {"stranger": _stdio("x.py")}})
    listed = _discovered(capsys)
    assert [(i["target"], i["scope"], i["file"]) for i in listed] == [
        ("claude-code:team", "project", str(repo / ".mcp.json")),
        ("cursor:docs", "project", str(repo / ".cursor/mcp.json")),
        ("vscode:near", "project", str(repo / "pkg/sub/.vscode/mcp.json"))]
    assert project_folders() == [repo / "pkg/sub", repo / "pkg", repo]
    assert main(["discover"]) == 0
    assert f"(project: {repo / '.mcp.json'})" in capsys.readouterr().out


def test_a_project_server_is_a_target_and_runs_in_its_project_folder(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``calc.py`` is relative: the host would start it in the project's folder, so
    mcpsync does too, whatever the current directory."""
    _write(repo / ".mcp.json", {"mcpServers": {"calc": _stdio("calc.py")}})
    capsys.readouterr()
    assert main(["call", "claude-code:calc", "add", "a=2", "b=3"]) == 0
    assert capsys.readouterr().out.strip() == "5"


def test_the_nearest_file_wins_a_name_and_the_others_are_shadowed(
        repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "home/.cursor/mcp.json", {"mcpServers": {"calc": {"command": "nope"}}})
    _write(repo / ".cursor/mcp.json", {"mcpServers": {"calc": _stdio("calc.py")}})
    listed = _discovered(capsys)
    assert [(i["scope"], i["shadowed"]) for i in listed] == [("project", False),
                                                             ("user", True)]
    assert main(["call", "cursor:calc", "add", "a=1", "b=1"]) == 0
    assert capsys.readouterr().out.strip() == "2"


def test_outside_a_repository_only_the_current_directory_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(HOME_VARIABLE, str(tmp_path / "home"))
    here = tmp_path / "loose" / "folder"
    here.mkdir(parents=True)
    _write(tmp_path / "loose/.mcp.json", {"mcpServers": {"parent": _stdio("x.py")}})
    _write(here / ".mcp.json", {"mcpServers": {"here": _stdio("x.py")}})
    monkeypatch.chdir(here)
    assert project_folders() == [here]
    assert [i["target"] for i in _discovered(capsys)] == ["claude-code:here"]


def test_a_broken_project_file_is_reported_and_the_rest_is_listed(
        repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".cursor").mkdir()
    (repo / ".cursor/mcp.json").write_text("{ not json")
    _write(tmp_path / "home/.cursor/mcp.json", {"mcpServers": {"calc": _stdio("calc.py")}})
    capsys.readouterr()
    assert main(["discover"]) == 0
    out, err = capsys.readouterr()
    assert "cursor:calc" in out
    assert f"cursor ({repo / '.cursor/mcp.json'})" in err and "not JSON" in err


def test_install_header_writes_an_http_entrys_headers(
        repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    (home / ".config/Claude").mkdir(parents=True)
    (home / ".config/Code/User").mkdir(parents=True)
    url = "https://api.example/mcp"
    header = "Authorization: Bearer ${API_TOKEN}"
    assert main(["install", "cursor", url, "--name", "api", "--header", header]) == 0
    cursor = json.loads((home / ".cursor/mcp.json").read_text())
    assert cursor["mcpServers"]["api"] == {
        "url": url, "headers": {"Authorization": "Bearer ${API_TOKEN}"}}
    assert main(["install", "vscode", url, "--name", "api", "--header", header,
                 "--header", "X-Team: blue"]) == 0
    vscode = json.loads((home / ".config/Code/User/mcp.json").read_text())
    assert vscode["servers"]["api"] == {"type": "http", "url": url, "headers": {
        "Authorization": "Bearer ${API_TOKEN}", "X-Team": "blue"}}
    # Claude Desktop runs commands: mcpsync run relays the URL with the header.
    assert main(["install", "claude-desktop", url, "--name", "api", "--header", header]) == 0
    desktop = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    assert desktop["mcpServers"]["api"]["args"] == [
        "-m", "mcpsync", "run", url, "--header=Authorization: Bearer ${API_TOKEN}"]
    capsys.readouterr()
    assert main(["install", "cursor", str(repo / "calc.py"), "--header", header]) == 1
    assert "--header applies to a URL" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["install", "cursor", url, "--header", "no colon"])


def test_an_installed_header_reaches_the_server(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The whole path: install with ``--header``, then ``HOST:NAME`` sends it (its
    variable expanded as the host would)."""
    from tests.hub.servers import build_notes
    from tests.serving import RunningServer

    seen: list[str | None] = []
    app = build_notes().wsgi_app(path="/mcp")

    def recording(environ: dict, start_response):  # type: ignore[no-untyped-def]
        seen.append(environ.get("HTTP_X_TEAM"))
        return app(environ, start_response)

    monkeypatch.setenv("TEAM", "green")
    with RunningServer(recording, on_stop=app.close) as running:
        assert main(["install", "cursor", running.base + "/mcp", "--name", "notes",
                     "--header", "X-Team: ${TEAM}"]) == 0
        assert main(["tools", "cursor:notes"]) == 0
    assert "add" in capsys.readouterr().out
    assert seen and set(seen) == {"green"}


def test_workspace_folder_in_a_project_file_is_that_projects_folder(
        repo: Path) -> None:
    # The current directory is two levels down in the repository; each project file's
    # ${workspaceFolder} is the folder that holds it (as the host that reads it expands
    # it), the user-level file's the current directory.
    from mcpsync.hosts.discover import discover

    def uses(name: str) -> dict:
        return {name: {"command": "${workspaceFolder}/run",
                       "args": ["${workspaceFolder}/calc.py"],
                       "env": {"ROOT": "${workspaceFolder}"}}}

    inner = repo / "pkg" / "sub"
    _write(repo / ".mcp.json", {"mcpServers": uses("claude")})
    _write(repo / ".cursor/mcp.json", {"mcpServers": uses("cursor")})
    _write(inner / ".vscode/mcp.json", {"servers": uses("vscode")})
    found = {c.name: c.entry for c in discover(["claude-code", "cursor", "vscode"]).servers}
    for name, folder in [("claude", repo), ("cursor", repo), ("vscode", inner)]:
        entry = found[name]
        assert not isinstance(entry, Exception), entry
        assert entry.command == (f"{folder}/run", f"{folder}/calc.py"), name
        assert dict(entry.env) == {"ROOT": str(folder)}, name


@pytest.mark.parametrize("relative", [".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json"])
def test_client_from_config_of_a_project_file_expands_workspace_folder_to_its_project(
        repo: Path, relative: str) -> None:
    # Client.from_config(path) reads the file as discover does, from any directory.
    from mcpsync.hub.config import load_entries

    path = repo / relative
    _write(path, {"servers": {"calc": {"command": "python",
                                       "args": ["${workspaceFolder}/calc.py"]}}})
    entry = load_entries(path)["calc"]
    assert not isinstance(entry, Exception), entry
    assert entry.command == ("python", f"{repo}/calc.py")
    # Any other file: the current directory, as before.
    other = repo / "configs" / "servers.json"
    _write(other, {"servers": {"calc": {"command": "${workspaceFolder}/x"}}})
    entry = load_entries(other)["calc"]
    assert not isinstance(entry, Exception)
    assert entry.command == (f"{repo}/pkg/sub/x",)
