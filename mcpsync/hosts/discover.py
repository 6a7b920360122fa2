"""``mcpsync discover`` and ``HOST:NAME`` targets: the servers configured in each host's
user-level file (:mod:`.registry`), read as :mod:`mcpsync.hub.config` reads any
configuration (comments, both shapes, variables).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..hub.config import ConfigError, ServerEntry, entries, load_json, servers_of
from .registry import HOSTS, HostError, config_path, host


@dataclass(frozen=True)
class Configured:
    """One server configured in a host: its entry, or why the entry can not be used."""

    host: str
    name: str
    path: Path
    entry: ServerEntry | ConfigError

    @property
    def target(self) -> str:
        """How the ``mcpsync`` command names it: ``HOST:NAME``."""
        return f"{self.host}:{self.name}"


@dataclass(frozen=True)
class Discovered:
    """Every host looked at: the servers found, and for each host whose file could not
    be read, why (a host with no file is simply not listed)."""

    servers: list[Configured]
    problems: dict[str, str]


def discover(hosts: Iterable[str] | None = None, *,
             environ: Mapping[str, str] | None = None) -> Discovered:
    """The servers configured in ``hosts`` (default: every host), host by host in
    :data:`~.registry.HOSTS` order, each host's in its file's order."""
    environ = os.environ if environ is None else environ
    servers: list[Configured] = []
    problems: dict[str, str] = {}
    for name in hosts or HOSTS:
        path = config_path(name, environ=environ)
        if not path.exists():
            continue
        try:
            table = servers_of(load_json(path))
        except ConfigError as exc:
            problems[name] = str(exc)
            continue
        for server, entry in entries(table, environ).items():
            servers.append(Configured(name, server, path, entry))
    return Discovered(servers, problems)


def is_host_target(target: str) -> bool:
    """Whether a TARGET is ``HOST:NAME`` (a host this module knows, then a name)."""
    head, colon, rest = target.partition(":")
    return bool(colon) and head in HOSTS and bool(rest) and not rest.startswith("//")


def find(target: str, *, environ: Mapping[str, str] | None = None) -> ServerEntry:
    """The entry ``HOST:NAME`` names; a :class:`~.registry.HostError` that says what is
    configured there when it names nothing."""
    host_name, _, name = target.partition(":")
    host(host_name)
    found = discover([host_name], environ=environ)
    if host_name in found.problems:
        raise HostError(found.problems[host_name])
    for configured in found.servers:
        if configured.name == name:
            if isinstance(configured.entry, ConfigError):
                raise HostError(f"{target}: {configured.entry}")
            return configured.entry
    names = [c.name for c in found.servers]
    path = config_path(host_name, environ=environ)
    where = (f"it has: {', '.join(names)}" if names else
             "it has none" if path.exists() else f"{path} does not exist")
    raise HostError(f"{HOSTS[host_name].title} has no server named {name!r} ({where}; "
                    f"see mcpsync discover)")


__all__ = ["Configured", "Discovered", "discover", "find", "is_host_target"]
