"""Reading an ``mcpServers``-style configuration: the file every host keeps (Claude
Desktop, Claude Code, Cursor: ``{"mcpServers": {...}}``; VS Code: ``{"servers": {...}}``)
turned into one :class:`ServerEntry` per server.

Why its own module: the hub (:mod:`.hub`), ``mcpsync discover`` and ``mcpsync install``
read the same files, and a host's file is JSON with comments (VS Code's ``mcp.json`` is
JSONC: ``//`` and ``/* */`` comments, trailing commas), so one reader strips them, and
only outside strings (a URL's ``//`` is not a comment).

What an entry may say (the union of the hosts' documented fields):

* stdio: ``command`` (a string), ``args`` (a list of strings), ``env`` (strings),
  ``cwd``; ``type`` absent or ``"stdio"``;
* HTTP: ``url``, ``headers``; ``type`` absent, ``"http"``, ``"streamable-http"``,
  ``"streamableHttp"`` or ``"sse"`` (the client falls back to 2024-11-05 HTTP+SSE by
  itself, so ``sse`` needs nothing more);
* ``disabled: true`` (Cursor, Cline) leaves the server out.

Variables, in ``command``, ``args``, ``env``, ``cwd``, ``url`` and ``headers`` (as Claude
Code expands them): ``${VAR}``, ``${VAR:-default}``, and VS Code's ``${env:VAR}``,
``${userHome}``, ``${workspaceFolder}`` (the project's folder for a project-level file, as
the host that reads it expands it: ``.mcp.json``'s folder, or the folder that holds
``.cursor/`` or ``.vscode/``; the current directory for any other). A variable that is not
set and has no default is left as written and named in :attr:`ServerEntry.warnings`
(Claude Code does the same); VS Code's ``${input:...}`` asks the user in the editor, so an
entry that uses one is an error here. An entry that can not be used is a
:class:`ConfigError` naming it; the hub reports it as that server's failure and goes on
with the others.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol.prefixes import PREFIX

#: The most a configuration file may hold: a host's file is a few KiB.
MAX_CONFIG_BYTES = 4 * 1024 * 1024
_HTTP_TYPES = {"http", "streamable-http", "streamablehttp", "sse"}
_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class ConfigError(ValueError):
    """A configuration (or one server's entry) that can not be used; ``server`` names the
    entry when it is about one."""

    def __init__(self, message: str, server: str | None = None) -> None:
        super().__init__(f"server {server!r}: {message}" if server else message)
        self.server = server


@dataclass(frozen=True)
class ServerEntry:
    """One configured server: a command to run (``kind == "stdio"``) or a URL
    (``"http"``), variables expanded. Frozen."""

    name: str
    kind: str
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Variables that were not set (left as written), one line each.
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        """The command line or URL, for listings: credentials in it redacted
        (``--api-key=…``, ``user:password@``), and ``env`` and ``headers`` never shown
        (they are where secrets go)."""
        import shlex

        from ..protocol.redact import redact

        return redact(shlex.join(self.command) if self.kind == "stdio" else self.url or "")


def strip_comments(text: str) -> str:
    """JSON with comments (JSONC) as plain JSON: ``//`` line and ``/* */`` block comments
    outside strings removed, and commas before ``}`` or ``]`` dropped. A string's
    content, escapes included, is kept as it is."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ConfigError("a /* comment is never closed")
            out.append(" ")
            i = end + 2
        else:
            out.append(ch)
            i += 1
    return _drop_trailing_commas("".join(out))


def _drop_trailing_commas(text: str) -> str:
    """Commas followed (past whitespace) by ``}`` or ``]``, outside strings, removed."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            continue
        if ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                i += 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def load_json(path: str | os.PathLike[str]) -> Any:
    """A JSON-with-comments file, parsed; a file over :data:`MAX_CONFIG_BYTES`, or one
    that does not parse, is a :class:`ConfigError` naming the file."""
    where = Path(path).expanduser()
    try:
        with where.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {where}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return parse_json(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ConfigError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def parse_json(text: str) -> Any:
    """JSON with comments, parsed (:func:`strip_comments`); a :class:`ConfigError` with
    the line and column when it does not parse."""
    try:
        return json.loads(strip_comments(text)) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
                          ) from None


def servers_of(config: Any) -> dict[str, Any]:
    """The server table of a configuration: its ``mcpServers`` (Claude, Cursor) or
    ``servers`` (VS Code) object, or the object itself when every value looks like an
    entry (a bare ``{"calc": {"command": ...}}``)."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"a configuration is a JSON object, not {type(config).__name__}")
    for key in ("mcpServers", "servers"):
        if key in config:
            table = config[key]
            if not isinstance(table, Mapping):
                raise ConfigError(f"{key!r} is not an object")
            return dict(table)
    if config and all(isinstance(v, Mapping) and ("command" in v or "url" in v)
                      for v in config.values()):
        return dict(config)
    if not config:
        return {}
    raise ConfigError("no 'mcpServers' (Claude, Cursor) or 'servers' (VS Code) object")


#: Project-level files (Claude Code, Cursor, VS Code), as (folder name or "", file name):
#: the project is the folder that holds the file, or its parent when it is in a host's
#: folder.
_PROJECT_FILES = frozenset({("", ".mcp.json"), (".cursor", "mcp.json"), (".vscode", "mcp.json")})


def project_folder(path: str | os.PathLike[str]) -> Path | None:
    """The project folder of a project-level host file (``<project>/.mcp.json``,
    ``<project>/.cursor/mcp.json``, ``<project>/.vscode/mcp.json``), absolute; None for any
    other file. Its ``${workspaceFolder}`` means this folder, wherever mcpsync runs."""
    where = Path(path).expanduser().absolute()
    if ("", where.name) in _PROJECT_FILES:
        return where.parent
    if (where.parent.name, where.name) in _PROJECT_FILES:
        return where.parent.parent
    return None


def load_entries(source: str | os.PathLike[str] | Mapping[str, Any],
                 environ: Mapping[str, str] | None = None
                 ) -> dict[str, ServerEntry | ConfigError]:
    """:func:`entries` of a path or a dict (:func:`read_config`), ``${workspaceFolder}``
    being the project's folder when the path is a project-level file."""
    workspace = None if isinstance(source, Mapping) else project_folder(source)
    return entries(read_config(source), environ, workspace=workspace)


def read_config(source: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """The server table of a path (JSON with comments) or of a dict already loaded."""
    config = source if isinstance(source, Mapping) else load_json(source)
    return servers_of(config)


def entries(table: Mapping[str, Any],
            environ: Mapping[str, str] | None = None, *,
            workspace: str | os.PathLike[str] | None = None
            ) -> dict[str, ServerEntry | ConfigError]:
    """Each server of ``table`` as a :class:`ServerEntry`, or the :class:`ConfigError`
    that says why it can not be used, in the table's order; disabled ones left out.
    ``workspace``: what ``${workspaceFolder}`` means (default: the current directory)."""
    environ = os.environ if environ is None else environ
    found: dict[str, ServerEntry | ConfigError] = {}
    for name, raw in table.items():
        if isinstance(raw, Mapping) and raw.get("disabled") is True:
            continue
        try:
            found[name] = entry(name, raw, environ, workspace=workspace)
        except ConfigError as exc:
            found[name] = exc
    return found


def entry(name: str, raw: Any, environ: Mapping[str, str], *,
          workspace: str | os.PathLike[str] | None = None) -> ServerEntry:
    """One server's entry, checked and expanded (``workspace``: see :func:`entries`)."""
    if not isinstance(name, str) or not PREFIX.fullmatch(name):
        raise ConfigError("a server's name is letters, digits, '_', '-' and '.' (it "
                          "prefixes its tools' names)", str(name))
    if not isinstance(raw, Mapping):
        raise ConfigError("its entry is not an object", name)
    warnings: list[str] = []
    expand = _Expander(name, environ, warnings, workspace)
    kind = str(raw.get("type") or raw.get("transport") or "").lower().replace("_", "-")
    if "url" in raw or kind in _HTTP_TYPES:
        given = raw.get("url")
        url = expand(given) if isinstance(given, str) else None
        if url is None or not url.startswith(("http://", "https://")):
            raise ConfigError(f"'url' must be an http:// or https:// URL, not {given!r}",
                              name)
        return ServerEntry(name, "http", url=url,
                           headers=_strings(raw.get("headers"), "headers", name, expand),
                           warnings=tuple(warnings))
    if kind not in ("", "stdio"):
        raise ConfigError(f"unknown server type {raw.get('type')!r} (stdio, http or sse)",
                          name)
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError("an entry needs a 'command' (stdio) or a 'url' (HTTP)", name)
    args = raw.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise ConfigError("'args' must be a list of strings", name)
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError("'cwd' must be a string", name)
    return ServerEntry(name, "stdio",
                       command=(expand(command), *(expand(str(a)) for a in args)),
                       env=_strings(raw.get("env"), "env", name, expand),
                       cwd=expand(cwd) if cwd else None, warnings=tuple(warnings))


def _strings(value: Any, what: str, name: str, expand: _Expander) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str | int | float | bool)
            for k, v in value.items()):
        raise ConfigError(f"{what!r} must be an object of strings", name)
    return {k: expand(v if isinstance(v, str) else json.dumps(v)) for k, v in value.items()}


class _Expander:
    """``${...}`` in one entry's strings, with the unset ones noted in ``warnings``."""

    def __init__(self, server: str, environ: Mapping[str, str], warnings: list[str],
                 workspace: str | os.PathLike[str] | None = None) -> None:
        self._server = server
        self._workspace = workspace
        self._environ = environ
        self._warnings = warnings

    def __call__(self, text: str) -> str:
        return _VARIABLE.sub(self._one, text)

    def _one(self, match: re.Match[str]) -> str:
        body = match.group(1)
        if body.startswith("input:"):
            raise ConfigError(f"{match.group(0)} asks the user in VS Code: put the value in "
                              f"'env' or an environment variable (${{env:NAME}})",
                              self._server)
        if body == "userHome":
            return os.path.expanduser("~")
        if body == "workspaceFolder":
            return os.fspath(self._workspace) if self._workspace is not None else os.getcwd()
        name, sep, default = body.partition(":-")
        if name.startswith("env:"):
            name = name[4:]
        value = self._environ.get(name)
        if value is not None:
            return value
        if sep:
            return default
        note = f"server {self._server!r}: {match.group(0)} is not set (left as written)"
        if note not in self._warnings:
            self._warnings.append(note)
        return match.group(0)


__all__ = ["MAX_CONFIG_BYTES", "ConfigError", "ServerEntry", "entries", "entry", "load_entries",
           "load_json", "parse_json", "project_folder", "read_config", "servers_of",
           "strip_comments"]
