"""``mcpsync install HOST TARGET`` and ``mcpsync discover``: the command-line side of
:mod:`mcpsync.hosts` (what a host's configuration holds and writing into it)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any
from urllib.parse import urlsplit

from ..hosts import HOSTS, HostError, config_path, discover, host, install, server_entry
from ..hub.config import ConfigError
from ..protocol.prefixes import PREFIX
from . import args as cli_args
from .output import safe, stdout_to_stderr
from .session import USAGE
from .target import TargetError, load_server

#: ``mcp-json`` is not a host: the entry is printed, for any host's file.
INSTALL_HOSTS = (*HOSTS, "mcp-json")


def add_parsers(sub: Any) -> None:
    """``install`` and ``discover`` on ``sub`` (argparse's subparsers)."""
    inst = sub.add_parser(
        "install", help="add a server to a host's configuration (Claude Desktop, Claude "
                        "Code, Cursor, VS Code), or print its entry (mcp-json)")
    inst.add_argument("host", choices=INSTALL_HOSTS, metavar="HOST",
                      help=f"one of {', '.join(INSTALL_HOSTS)}")
    inst.add_argument("target", metavar="TARGET",
                      help="a SERVER (FILE[:OBJ] or MODULE:OBJ, run by mcpsync with this "
                           "Python), a URL, or a command line in quotes")
    inst.add_argument("--name", default=None,
                      help="the server's name in the host (default: the Server's name, or "
                           "a URL's host name)")
    inst.add_argument("--with", dest="packages", action="append", default=[],
                      metavar="PACKAGE",
                      help="a package the server needs (repeatable): the host runs it with "
                           "`uv run --with ...` (uv must be installed)")
    inst.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                      type=_env_pair, help="an environment variable for the server "
                                           "(repeatable)")
    inst.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                      type=cli_args.header,
                      help="a header the host sends on every request to a URL (repeatable; "
                           "e.g. 'Authorization: Bearer ${API_TOKEN}', expanded by the host)")
    inst.add_argument("--config", default=None, metavar="PATH",
                      help="write this file instead of the host's own (e.g. a project's "
                           ".cursor/mcp.json, .vscode/mcp.json or .mcp.json)")
    disc = sub.add_parser("discover",
                          help="list the servers configured in Claude Desktop, Claude "
                               "Code, Cursor and VS Code (their project files from here up "
                               "to the repository root, then the user's), as HOST:NAME "
                               "targets")
    disc.add_argument("hosts", nargs="*", metavar="HOST",
                      help=f"only these hosts ({', '.join(HOSTS)}; default: all)")
    disc.add_argument("--json", action="store_true", help="print JSON (for scripts)")


def _env_pair(text: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


def run(args: argparse.Namespace) -> int:
    try:
        return _install(args) if args.command == "install" else _discover(args)
    except HostError as exc:
        print(f"mcpsync: {safe(str(exc))}", file=sys.stderr)
        return 1


def _install(args: argparse.Namespace) -> int:
    target: str = args.target
    chosen = None if args.host == "mcp-json" else host(args.host)
    entry = server_entry(chosen, target, env=dict(args.env), packages=args.packages,
                         headers=dict(args.header))
    name = args.name or _default_name(target)
    if not PREFIX.fullmatch(name):
        raise TargetError(f"{name!r} can not be a server's name: letters, digits, '_', '-' "
                          f"and '.' (it prefixes its tools' names)")
    if chosen is None:
        print(json.dumps({name: entry}, indent=2))
        return 0
    from pathlib import Path

    done = install(chosen, name, entry, path=Path(args.config) if args.config else None)
    where = done.path if done.path is not None else config_path(chosen.name)
    if done.change == "unchanged":
        print(f"mcpsync: {name!r} is already in {chosen.title}'s configuration ({where}); "
              f"nothing changed", file=sys.stderr)
        return 0
    backup = f"; the previous file is {done.backup}" if done.backup else ""
    print(f"mcpsync: {done.change} {name!r} in {chosen.title}'s configuration ({where}"
          f"{backup}); restart {chosen.title} to use it", file=sys.stderr)
    for note in done.notes:
        print(f"mcpsync: note: {note}", file=sys.stderr)
    return 0


def _default_name(target: str) -> str:
    """A SERVER's own name (it is loaded, as ``mcpsync run`` would); a URL's host name;
    a command line has none that can be trusted (``npx``), so it needs ``--name``."""
    if target.startswith(("http://", "https://")):
        hostname = urlsplit(target).hostname or ""
        return re.sub(r"[^A-Za-z0-9_.-]", "-", hostname) or "server"
    if any(c.isspace() for c in target.strip()):
        raise TargetError("a command line needs --name NAME (what the host calls it)")
    with stdout_to_stderr():
        server = load_server(target)
    return re.sub(r"[^A-Za-z0-9_.-]", "-", server.name)


def _discover(args: argparse.Namespace) -> int:
    for name in args.hosts:
        if name not in HOSTS:
            raise TargetError(f"unknown host {name!r}: one of {', '.join(HOSTS)}")
    found = discover(args.hosts or None)
    for host_name, problem in found.problems.items():
        print(f"mcpsync: {host_name}: {safe(problem)}", file=sys.stderr)
    if args.json:
        print(json.dumps([_as_json(c) for c in found.servers], indent=2))
        return 0
    if not found.servers:
        looked = ", ".join(str(config_path(h)) for h in (args.hosts or HOSTS))
        print(f"no servers configured (looked in {looked})")
        return 0
    width = max(len(c.target) for c in found.servers)
    for configured in found.servers:
        entry = configured.entry
        if isinstance(entry, ConfigError):
            line = f"unusable  {entry}"
        else:
            line = f"{entry.kind:<8}  {entry.describe()}"
        if configured.scope == "project":
            line += f"  (project: {configured.path})"
        if configured.shadowed:
            line += "  (shadowed by a nearer file)"
        print(safe(f"{configured.target:<{width}}  {line}"))
    return 0


def _as_json(configured: Any) -> dict[str, Any]:
    entry = configured.entry
    item: dict[str, Any] = {"target": configured.target, "host": configured.host,
                            "name": configured.name, "file": str(configured.path),
                            "scope": configured.scope, "shadowed": configured.shadowed}
    if isinstance(entry, ConfigError):
        item["error"] = str(entry)
    else:
        item.update(kind=entry.kind, command=list(entry.command) or None, url=entry.url)
    return item


__all__ = ["INSTALL_HOSTS", "USAGE", "add_parsers", "run"]
