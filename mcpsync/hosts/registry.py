"""The hosts ``mcpsync install`` writes to and ``mcpsync discover`` reads: where each keeps
its servers, per platform, as each host documents it.

* ``claude-desktop`` (``mcpServers``): macOS ``~/Library/Application
  Support/Claude/claude_desktop_config.json``; Windows
  ``%APPDATA%\\Claude\\claude_desktop_config.json``; Linux
  ``$XDG_CONFIG_HOME/Claude/claude_desktop_config.json`` (``~/.config``);
* ``claude-code`` (``mcpServers``): ``~/.claude.json``, the user scope that ``claude
  mcp add --scope user`` writes;
* ``cursor`` (``mcpServers``): ``~/.cursor/mcp.json`` on every platform;
* ``vscode`` (``servers``): the user profile's ``mcp.json``: macOS
  ``~/Library/Application Support/Code/User/mcp.json``; Windows
  ``%APPDATA%\\Code\\User\\mcp.json``; Linux ``$XDG_CONFIG_HOME/Code/User/mcp.json``.

Claude Desktop has no Linux release; the path is the one its community builds use.

Three hosts also read a file kept in the project (:data:`PROJECT_FILES`): Claude Code's
project scope ``.mcp.json`` at the project root, Cursor's ``.cursor/mcp.json`` and VS
Code's workspace ``.vscode/mcp.json``. Which folders count as the project is
:func:`project_folders`' rule: from the current directory upward to the repository root.

``MCPSYNC_CONFIG_HOME`` replaces the home directory for all of them (and ``%APPDATA%``
and ``$XDG_CONFIG_HOME`` become its ``AppData/Roaming`` and ``.config``), so that tests
and scripts can point every host at a folder of their own. A host is *present* when the
folder its file lives in exists (the host made it when it was installed and first run).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: The variable that moves every host's configuration under another home directory.
HOME_VARIABLE = "MCPSYNC_CONFIG_HOME"


@dataclass(frozen=True)
class Host:
    """One host application: its name on the command line, how it is called in
    messages, the key of its server table, and whether an entry says its ``type``."""

    name: str
    title: str
    key: str
    #: VS Code wants ``"type": "stdio"``/``"http"`` on every entry; Claude Code and
    #: Cursor take it (and need it for HTTP); Claude Desktop runs commands only.
    typed: bool
    #: Whether the host's file can hold a URL entry (Claude Desktop's can not: a URL is
    #: installed as a command that relays it over stdio, ``mcpsync run URL``).
    urls: bool


HOSTS: dict[str, Host] = {
    "claude-desktop": Host("claude-desktop", "Claude Desktop", "mcpServers", False, False),
    "claude-code": Host("claude-code", "Claude Code", "mcpServers", True, True),
    "cursor": Host("cursor", "Cursor", "mcpServers", False, True),
    "vscode": Host("vscode", "VS Code", "servers", True, True),
}


#: The project-level file of each host that has one, relative to a project folder.
PROJECT_FILES: dict[str, str] = {
    "claude-code": ".mcp.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
}


def project_folders(start: Path | None = None) -> list[Path]:
    """The folders whose project files count, nearest first: ``start`` (the current
    directory) and each parent up to the repository root, the first folder that holds a
    ``.git`` (a directory, or a file in a worktree). Outside a repository, ``start``
    alone: a walk to the filesystem root would read files of unrelated projects (a
    ``.mcp.json`` left in the home directory, say)."""
    start = (Path.cwd() if start is None else start).resolve()
    walked: list[Path] = []
    for folder in (start, *start.parents):
        walked.append(folder)
        if (folder / ".git").exists():
            return walked
    return [start]


def project_paths(name: str, start: Path | None = None) -> list[Path]:
    """The project-level files of the host ``name`` that exist, nearest first."""
    relative = PROJECT_FILES.get(name)
    if relative is None:
        return []
    return [folder / relative for folder in project_folders(start)
            if (folder / relative).is_file()]


class HostError(Exception):
    """A host that can not be used here (not installed, its file unreadable); one line."""


def host(name: str) -> Host:
    found = HOSTS.get(name)
    if found is None:
        raise HostError(f"unknown host {name!r}: one of {', '.join(HOSTS)}")
    return found


def _home(environ: Mapping[str, str]) -> tuple[Path, bool]:
    """The home directory, and whether it was moved by :data:`HOME_VARIABLE`."""
    moved = environ.get(HOME_VARIABLE)
    if moved:
        return Path(moved), True
    return Path(os.path.expanduser("~")), False


def _app_data(platform: str, environ: Mapping[str, str]) -> Path:
    """Where per-user application settings live: macOS ``Library/Application Support``,
    Windows ``%APPDATA%``, elsewhere ``$XDG_CONFIG_HOME`` (``~/.config``)."""
    home, moved = _home(environ)
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith("win"):
        appdata = None if moved else environ.get("APPDATA")
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    xdg = None if moved else environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else home / ".config"


def config_path(name: str, *, platform: str | None = None,
                environ: Mapping[str, str] | None = None) -> Path:
    """The user-level configuration file of the host ``name`` on ``platform``."""
    platform = sys.platform if platform is None else platform
    environ = os.environ if environ is None else environ
    host(name)
    home, _ = _home(environ)
    if name == "claude-desktop":
        return _app_data(platform, environ) / "Claude" / "claude_desktop_config.json"
    if name == "claude-code":
        return home / ".claude.json"
    if name == "cursor":
        return home / ".cursor" / "mcp.json"
    return _app_data(platform, environ) / "Code" / "User" / "mcp.json"


def present(name: str, path: Path | None = None, *,
            environ: Mapping[str, str] | None = None) -> bool:
    """Whether the host looks installed: the folder of its file exists (for Claude Code,
    whose file sits in the home directory, the file itself or its ``~/.claude``
    folder)."""
    path = config_path(name, environ=environ) if path is None else path
    if name == "claude-code":
        return path.exists() or (path.parent / ".claude").is_dir()
    return path.parent.is_dir()


__all__ = ["HOME_VARIABLE", "HOSTS", "PROJECT_FILES", "Host", "HostError", "config_path", "host",
           "present", "project_folders", "project_paths"]
