"""``mcpsync discover`` and ``HOST:NAME`` targets: the servers configured in each host's
project-level files (from the current directory up to the repository root) and its
user-level file (:mod:`.registry`), read as :mod:`mcpsync.hub.config` reads any
configuration (comments, both shapes, variables).

Which entry a name means when several files of one host have it: the nearest project file
first, the user-level file last, as the hosts themselves rank them (Claude Code: local,
then project, then user; Cursor: the project's file, then the global one). The others are
still listed, marked shadowed.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..hub.config import ConfigError, ServerEntry, entries, load_json, servers_of
from .registry import HOSTS, HostError, config_path, host, project_paths


@dataclass(frozen=True)
class Configured:
    """One server configured in a host: its entry, or why the entry can not be used;
    ``scope`` is ``"project"`` or ``"user"``; ``shadowed``: a nearer file of the same
    host has a server of the same name, which ``HOST:NAME`` means."""

    host: str
    name: str
    path: Path
    entry: ServerEntry | ConfigError
    scope: str = "user"
    shadowed: bool = False

    @property
    def target(self) -> str:
        """How the ``mcpsync`` command names it: ``HOST:NAME``."""
        return f"{self.host}:{self.name}"


@dataclass(frozen=True)
class Discovered:
    """Every host looked at: the servers found, and for each file that could not be
    read, why (keyed ``HOST`` for a user-level file, ``HOST (PATH)`` for a project's; a
    host with no file is simply not listed)."""

    servers: list[Configured]
    problems: dict[str, str]


def discover(hosts: Iterable[str] | None = None, *,
             environ: Mapping[str, str] | None = None,
             cwd: Path | None = None) -> Discovered:
    """The servers configured in ``hosts`` (default: every host), host by host in
    :data:`~.registry.HOSTS` order; for each host its project files nearest first (from
    ``cwd``, default the current directory), then its user-level file, each in its file's
    order."""
    environ = os.environ if environ is None else environ
    servers: list[Configured] = []
    problems: dict[str, str] = {}
    for name in hosts or HOSTS:
        files = [(path, "project") for path in project_paths(name, cwd)]
        files.append((config_path(name, environ=environ), "user"))
        seen: set[str] = set()
        for path, scope in files:
            if not path.exists():
                continue
            try:
                table = servers_of(load_json(path))
            except ConfigError as exc:
                problems[name if scope == "user" else f"{name} ({path})"] = str(exc)
                continue
            workspace = _project_of(path, name) if scope == "project" else None
            for server, entry in entries(table, environ, workspace=workspace).items():
                if scope == "project" and isinstance(entry, ServerEntry) and entry.cwd is None:
                    # The host starts it in the project's folder: relative paths in its
                    # command mean files of the project.
                    entry = dataclasses.replace(entry, cwd=str(_project_of(path, name)))
                servers.append(Configured(name, server, path, entry, scope, server in seen))
                seen.add(server)
    return Discovered(servers, problems)


def _project_of(path: Path, host_name: str) -> Path:
    """The project folder of a project-level file (``.cursor/mcp.json`` -> its parent's
    parent)."""
    return path.parent if host_name == "claude-code" else path.parent.parent


def is_host_target(target: str) -> bool:
    """Whether a TARGET is ``HOST:NAME`` (a host this module knows, then a name)."""
    head, colon, rest = target.partition(":")
    return bool(colon) and head in HOSTS and bool(rest) and not rest.startswith("//")


def find(target: str, *, environ: Mapping[str, str] | None = None,
         cwd: Path | None = None) -> ServerEntry:
    """The entry ``HOST:NAME`` names (the nearest file's, see the module); a
    :class:`~.registry.HostError` that says what is configured there when it names
    nothing."""
    host_name, _, name = target.partition(":")
    host(host_name)
    found = discover([host_name], environ=environ, cwd=cwd)
    for configured in found.servers:
        if configured.name == name:
            if isinstance(configured.entry, ConfigError):
                raise HostError(f"{target}: {configured.entry}")
            return configured.entry
    if found.problems:
        raise HostError("; ".join(found.problems.values()))
    names = list(dict.fromkeys(c.name for c in found.servers))
    path = config_path(host_name, environ=environ)
    where = (f"it has: {', '.join(names)}" if names else
             "it has none" if path.exists() else f"{path} does not exist")
    raise HostError(f"{HOSTS[host_name].title} has no server named {name!r} ({where}; "
                    f"see mcpsync discover)")


__all__ = ["Configured", "Discovered", "discover", "find", "is_host_target"]
