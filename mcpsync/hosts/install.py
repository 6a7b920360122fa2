"""``mcpsync install HOST TARGET``: write a server's entry into a host's configuration.

What makes it safe to run twice or on a file the user edits by hand:

* **Idempotent.** The entry is compared with what the file holds under that name: the
  same entry changes nothing (not even the file's time), another one is replaced, a new
  one added; every other key and server of the file is kept, in its order.
* **A backup.** Before a file is changed, its previous content is copied next to it as
  ``<file>.bak`` (the last one kept). VS Code's file may hold comments, which a JSON
  writer can not keep: the result says so, and the backup has them.
* **Atomic.** The new content is written to a temporary file in the same folder, then
  renamed over the old one, so a host reading it never sees half a file. Its mode is kept.
* **A host that is not there** is an error that says which folder was looked for, rather
  than a folder made for an application that is not installed.

Claude Code is configured through its own command when it is installed (``claude mcp
add-json --scope user``, which keeps its large ``~/.claude.json`` consistent while it
runs); without the ``claude`` program, or when the configuration is pointed elsewhere
(``--config``, ``MCPSYNC_CONFIG_HOME``), its file's ``mcpServers`` is written directly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hub.config import ConfigError, load_json, strip_comments
from ..transports.subprocess import command_line
from .registry import HOME_VARIABLE, Host, HostError, config_path, present

#: How long ``claude mcp ...`` may take.
CLAUDE_TIMEOUT = 30.0


@dataclass(frozen=True)
class Installed:
    """What an install did: ``change`` is ``"added"``, ``"updated"`` or ``"unchanged"``;
    ``path`` the file written (or that the ``claude`` command wrote)."""

    host: str
    name: str
    entry: dict[str, Any]
    path: Path | None
    change: str
    backup: Path | None = None
    notes: tuple[str, ...] = field(default=())


def server_entry(host: Host | None, target: str, *, env: Mapping[str, str] | None = None,
                 packages: Sequence[str] = (),
                 headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The entry that runs ``target`` for ``host`` (None: the portable ``mcpServers``
    form): a URL (an HTTP entry with ``headers``; for a host that takes commands only,
    ``mcpsync run URL --header ...`` relays it over stdio), a command line, or a SERVER
    (``FILE[:OBJ]``, ``MODULE:OBJ``) run by ``mcpsync run`` with this Python, or with
    ``uv run --with`` each of ``packages`` (which needs ``uv``)."""
    typed = host is None or host.typed
    if target.startswith(("http://", "https://")):
        if packages:
            raise HostError("--with applies to a SERVER run by mcpsync, not a URL")
        if env:
            raise HostError("--env applies to a command, not a URL")
        if host is None or host.urls:
            entry: dict[str, Any] = {"type": "http", "url": target} if typed else {
                "url": target}
            if headers:
                entry["headers"] = dict(headers)
            return entry
        relay = [f"--header={name}: {value}" for name, value in (headers or {}).items()]
        command = _python_command(["run", target, *relay], packages)
    elif headers:
        raise HostError("--header applies to a URL, not a command")
    elif any(c.isspace() for c in target.strip()):
        if packages:
            raise HostError("--with applies to a SERVER run by mcpsync, not a command line")
        try:  # the one reading of a command line: the host runs what mcpsync would
            command = command_line(target)
        except ValueError as exc:
            raise HostError(str(exc)) from None
    else:
        command = _python_command(["run", _absolute_spec(target)], packages)
    entry = {"type": "stdio"} if typed else {}
    entry["command"] = command[0]
    entry["args"] = command[1:]
    if env:
        entry["env"] = dict(env)
    return entry


def _absolute_spec(spec: str) -> str:
    """``FILE[:OBJ]`` with the file made absolute (a host starts servers from a folder of
    its own); ``MODULE:OBJ`` as given."""
    target, colon, attr = spec.partition(":")
    if target.endswith(".py") or os.sep in target or "/" in target or Path(target).is_file():
        path = Path(target).resolve()
        if not path.is_file():
            raise HostError(f"no such file: {target}")
        return f"{path}{colon}{attr}"
    return spec


def _python_command(arguments: list[str], packages: Sequence[str]) -> list[str]:
    """``python -m mcpsync ARGUMENTS`` with this interpreter (which has mcpsync and the
    server's packages), or ``uv run --with mcpsync --with PKG ...`` when packages are
    named."""
    if not packages:
        return [sys.executable, "-m", "mcpsync", *arguments]
    uv = shutil.which("uv")
    if uv is None:
        raise HostError("--with needs uv (https://docs.astral.sh/uv/) on PATH: it makes the "
                        "environment the server runs in")
    withs = [part for package in ("mcpsync", *packages) for part in ("--with", package)]
    return [uv, "run", *withs, "python", "-m", "mcpsync", *arguments]


def install(host: Host, name: str, entry: dict[str, Any], *, path: Path | None = None,
            environ: Mapping[str, str] | None = None) -> Installed:
    """Write ``entry`` as the server ``name`` into ``host``'s configuration (``path``,
    else the host's own file); see the module for the guarantees."""
    environ = os.environ if environ is None else environ
    given = path is not None
    path = config_path(host.name, environ=environ) if path is None else path
    if not given and not present(host.name, path, environ=environ):
        raise HostError(f"{host.title} does not seem to be installed here: {path.parent} "
                        f"does not exist (install and start it once, or name the file "
                        f"with --config)")
    claude = shutil.which("claude") if host.name == "claude-code" else None
    if claude is not None and not given and not environ.get(HOME_VARIABLE):
        return _claude_add(claude, name, entry, path)
    return write_entry(host, name, entry, path)


def write_entry(host: Host, name: str, entry: dict[str, Any], path: Path) -> Installed:
    """Put ``entry`` under ``host.key``/``name`` of the JSON file ``path`` (made when
    absent): idempotent, backed up, atomic."""
    text = path.read_text(encoding="utf-8-sig") if path.exists() else ""
    try:
        data = load_json(path) if text.strip() else {}
    except ConfigError as exc:
        raise HostError(f"{exc} (fix or move it; nothing was written)") from None
    if not isinstance(data, dict):
        raise HostError(f"{path} does not hold a JSON object (nothing was written)")
    table = data.get(host.key)
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise HostError(f"{path}: {host.key!r} is not an object (nothing was written)")
    if table.get(name) == entry:
        return Installed(host.name, name, entry, path, "unchanged")
    change = "updated" if name in table else "added"
    data[host.key] = {**table, name: entry}
    notes: list[str] = []
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
        if strip_comments(text) != text:
            notes.append(f"its comments were not kept (they are in {backup})")
    _replace(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return Installed(host.name, name, entry, path, change, backup, tuple(notes))


def _replace(path: Path, content: str) -> None:
    """``path`` holds ``content``, written beside it and renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o600
    temporary = path.with_name(f".{path.name}.mcpsync-{os.getpid()}")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def _claude_add(claude: str, name: str, entry: dict[str, Any], path: Path) -> Installed:
    """``claude mcp add-json --scope user NAME JSON`` (removing a different entry of that
    name first, since ``add-json`` refuses to replace one)."""
    try:
        current = load_json(path).get("mcpServers", {}).get(name) if path.exists() else None
    except (ConfigError, AttributeError):
        current = None
    if current == entry:
        return Installed("claude-code", name, entry, path, "unchanged")
    if current is not None:
        _claude(claude, ["mcp", "remove", "--scope", "user", name])
    _claude(claude, ["mcp", "add-json", "--scope", "user", name, json.dumps(entry)])
    return Installed("claude-code", name, entry, path,
                     "updated" if current is not None else "added")


def _claude(claude: str, arguments: list[str]) -> None:
    try:
        done = subprocess.run([claude, *arguments], capture_output=True, text=True,
                              timeout=CLAUDE_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HostError(f"`claude {arguments[0]} {arguments[1]}` did not finish within "
                        f"{CLAUDE_TIMEOUT:g} s") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise HostError(f"`claude {' '.join(arguments[:2])}` failed with status "
                        f"{done.returncode}: {said[-1] if said else 'no message'}")


__all__ = ["CLAUDE_TIMEOUT", "Installed", "install", "server_entry", "write_entry"]
