"""The ``mcpsync`` command.

    mcpsync run MODULE_OR_FILE:OBJ            serve a Server over stdio
    mcpsync serve MODULE_OR_FILE:OBJ [--host H] [--port N]
                                              serve it over HTTP at http://H:N/mcp
                                              (werkzeug's threaded development server)
    mcpsync tools TARGET                      list a server's tools
    mcpsync call TARGET TOOL [JSON_ARGS]      call a tool, print the result as JSON

TARGET is a command line that starts a stdio server (quote it as one argument, e.g.
``"python server.py"``) or ``MODULE_OR_FILE:OBJ`` for a server in this process.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .client import Client
from .codec import to_wire
from .errors import MCPSyncError
from .server.server import Server


def load_server(spec: str) -> Server:
    """Import ``module:attr`` or ``path/to/file.py:attr`` (attr defaults to ``server``)."""
    target, _, attr = spec.partition(":")
    attr = attr or "server"
    if target.endswith(".py") or "/" in target or Path(target).is_file():
        path = Path(target).resolve()
        if not path.is_file():
            raise SystemExit(f"mcpsync: no such file: {target}")
        sys.path.insert(0, str(path.parent))
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise SystemExit(f"mcpsync: cannot import {target}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[path.stem] = module
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise SystemExit(f"mcpsync: cannot import {target}: {exc}") from None
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SystemExit(f"mcpsync: {target} has no attribute {attr!r}") from None
    if callable(obj) and not isinstance(obj, Server):
        obj = obj()
    if not isinstance(obj, Server):
        raise SystemExit(f"mcpsync: {spec} is a {type(obj).__name__}, not a mcpsync.Server")
    return obj


def _connect(target: str, timeout: float) -> Client:
    if ":" in target and " " not in target and not target.startswith(("http:", "https:")):
        try:
            return Client.memory(load_server(target), timeout=timeout)
        except SystemExit:
            pass
    if target.startswith(("http://", "https://")):
        raise SystemExit("mcpsync: HTTP targets are not supported yet")
    return Client.stdio(shlex.split(target), timeout=timeout)


def _serve(args: argparse.Namespace) -> int:
    from .http import serve
    from .http.security import LOOPBACK

    server = load_server(args.server)
    hosts = list(LOOPBACK) + list(args.allowed_hosts or [])
    if args.host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        hosts.append(args.host)

    def ready(url: str) -> None:
        print(f"mcpsync: serving {server.name} at {url}", file=sys.stderr, flush=True)

    serve(server, args.host, args.port, path=args.path, allowed_hosts=hosts, ready=ready)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcpsync", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="serve a Server over stdio")
    run.add_argument("server", help="MODULE_OR_FILE:OBJ")
    serve = sub.add_parser("serve", help="serve a Server over Streamable HTTP (development)")
    serve.add_argument("server", help="MODULE_OR_FILE:OBJ")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--path", default="/mcp")
    serve.add_argument("--allow-host", action="append", default=None, dest="allowed_hosts",
                       help="also accept this Host (repeatable; loopback is always allowed)")
    tools = sub.add_parser("tools", help="list the tools of a server")
    tools.add_argument("target")
    call = sub.add_parser("call", help="call a tool")
    call.add_argument("target")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object")
    for p in (tools, call):
        p.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)

    if args.command == "run":
        load_server(args.server).run_stdio()
        return 0
    if args.command == "serve":
        return _serve(args)
    try:
        arguments: Any = json.loads(args.arguments) if args.command == "call" else None
    except ValueError as exc:
        parser.error(f"arguments must be JSON: {exc}")
    if args.command == "call" and not isinstance(arguments, dict):
        parser.error("arguments must be a JSON object")
    try:
        with _connect(args.target, args.timeout) as client:
            if args.command == "tools":
                listing = [to_wire(tool) for tool in client.list_tools()]
                print(json.dumps(listing, indent=2, ensure_ascii=False))
                return 0
            result = client.call_tool(args.tool, arguments)
            print(json.dumps(to_wire(result), indent=2, ensure_ascii=False))
            return 1 if result.is_error else 0
    except MCPSyncError as exc:
        print(f"mcpsync: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
