"""The ``mcpsync`` command.

    mcpsync run SERVER [--task-store PATH]    serve a Server over stdio
    mcpsync serve SERVER [--host H] [--port N] [--timeout S] [--max-connections N]
                         [--task-store PATH]  serve it over HTTP at http://H:N/mcp
                                              (a development server: werkzeug, threaded)
    mcpsync tools TARGET                      list a server's tools
    mcpsync call TARGET TOOL [JSON_ARGS]      call a tool, print the result as JSON

SERVER is MODULE_OR_FILE[:OBJ] (OBJ defaults to ``server``): a ``Server`` in this process.

TARGET is one of
  - a command line that starts a stdio server, quoted as one argument ("python server.py");
  - MODULE_OR_FILE:OBJ, a Server loaded into this process (the colon is what says so);
  - one word without a colon: a program on PATH (or an executable file) to run, except a
    ``.py`` file without execute permission, which is loaded as FILE:server; either way
    the command says which it did.

``--task-store PATH`` keeps the server's tasks in the SQLite file PATH (created if absent)
instead of in memory: they survive a restart, and processes sharing the file share them.

A TARGET or SERVER that can not be used (no such file, no such object, not a Server, not a
command), or a task store that can not be opened, is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import shlex
import shutil
import sqlite3
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .client import Client
from .codec import to_wire
from .errors import MCPSyncError
from .server.server import Server

#: Exit status for a TARGET/SERVER (or other argument) that can not be used.
USAGE = 2


class TargetError(ValueError):
    """A TARGET or SERVER argument that can not be used; ``main`` prints it as one line and
    exits with status 2."""


def _one_line(exc: BaseException, near: Path | None = None) -> str:
    """``Type: message (file, line N)``: the last frame in ``near`` (the user's file), if any."""
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError):
        where = f" ({exc.filename}, line {exc.lineno})" if exc.filename else ""
        return f"SyntaxError: {exc.msg}{where}"
    frames: list[traceback.FrameSummary] = list(traceback.extract_tb(exc.__traceback__))
    if near is not None:
        frames = [f for f in frames if Path(f.filename).resolve() == near] or frames
    if frames:
        text += f" ({frames[-1].filename}, line {frames[-1].lineno})"
    return " ".join(text.split())


def _looks_like_file(target: str) -> bool:
    return target.endswith(".py") or os.sep in target or "/" in target


def load_server(spec: str) -> Server:
    """Import ``module:attr`` or ``path/to/file.py:attr`` (attr defaults to ``server``).

    Raises :class:`TargetError` (one line, no traceback) when that is not a ``Server``: a
    missing file or module, an import that fails, a missing attribute, another kind of
    object. A callable that is not a ``Server`` is called, and must return one.
    """
    if not spec.strip() or any(c.isspace() for c in spec):
        raise TargetError(f"{spec!r} is not MODULE_OR_FILE[:OBJ] (a command line such as "
                          f"'python server.py' is a TARGET for tools and call, not a SERVER)")
    target, _, attr = spec.partition(":")
    attr = attr or "server"
    if not target:
        raise TargetError(f"{spec!r} names no module or file before the colon")
    path: Path | None = None
    if _looks_like_file(target) or Path(target).is_file():
        path = Path(target).resolve()
        if not path.is_file():
            raise TargetError(f"no such file: {target}")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise TargetError(f"cannot import {target}: not a Python file")
        sys.path.insert(0, str(path.parent))
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[path.stem] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            raise TargetError(f"importing {target} failed: {_one_line(exc, path)}") from None
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (target == exc.name or
                                         target.startswith(exc.name + ".")):
                raise TargetError(f"no module named {target!r} (and no file of that name)"
                                  ) from None
            raise TargetError(f"importing {target} failed: {_one_line(exc)}") from None
        except Exception as exc:
            raise TargetError(f"importing {target} failed: {_one_line(exc)}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            servers = sorted(n for n, v in vars(module).items() if isinstance(v, Server))
            hint = f" (it has: {', '.join(servers)})" if servers else " (it has no Server)"
            raise TargetError(f"{target} has no attribute {attr!r}{hint}") from None
    if callable(obj) and not isinstance(obj, Server):
        try:
            obj = obj()
        except Exception as exc:
            raise TargetError(f"calling {target}:{attr}() failed: {_one_line(exc, path)}"
                              ) from None
        if not isinstance(obj, Server):
            raise TargetError(f"{target}:{attr}() returned a {type(obj).__name__}, not a "
                              f"mcpsync.Server")
    if not isinstance(obj, Server):
        raise TargetError(f"{target}:{attr} is a {type(obj).__name__}, not a mcpsync.Server")
    return obj


def _is_program(word: str) -> bool:
    if os.path.dirname(word):
        return os.path.isfile(word) and os.access(word, os.X_OK)
    return shutil.which(word) is not None


def _connect(target: str, timeout: float) -> Client:
    """Interpret TARGET (see the module docstring) and connect to it."""
    if target.startswith(("http://", "https://")):
        raise TargetError("HTTP targets are not supported yet")
    if not target.strip():
        raise TargetError("TARGET is empty")
    if any(c.isspace() for c in target.strip()):
        try:
            command = shlex.split(target)
        except ValueError as exc:
            raise TargetError(f"cannot split the command line {target!r}: {exc}") from None
        return Client.stdio(command, timeout=timeout)
    if ":" in target:
        return Client.memory(load_server(target), timeout=timeout)
    if target.endswith(".py") and os.path.isfile(target) and not _is_program(target):
        print(f"mcpsync: loading {target}:server in this process (to run it as a command "
              f"instead, write \"python {target}\")", file=sys.stderr)
        return Client.memory(load_server(target), timeout=timeout)
    if _is_program(target):
        if target.endswith(".py"):
            print(f"mcpsync: running {target} as a command (to load it in this process "
                  f"instead, write {target}:server)", file=sys.stderr)
        return Client.stdio([target], timeout=timeout)
    raise TargetError(f"{target!r} is neither a command on PATH nor MODULE_OR_FILE:OBJ (for "
                      f"a Server in this process write {target}:server; for a command line "
                      f"quote it with its arguments)")


def _with_task_store(server: Server, path: str | None) -> Server:
    """``server`` with its tasks kept in the SQLite file ``path`` (if given). Opened before
    serving, so a path that can not be used is a usage error, not a failure later."""
    if path is None:
        return server
    from .tasks.sqlite import SqliteTaskStore

    try:
        store = SqliteTaskStore(path)
    except (sqlite3.Error, OSError) as exc:
        raise TargetError(f"cannot use {path!r} as the task store: {exc}") from None
    server.task_store = store
    return server


def _serve(args: argparse.Namespace) -> int:
    from .http import serve
    from .http.security import LOOPBACK

    server = _with_task_store(load_server(args.server), args.task_store)
    hosts = list(LOOPBACK) + list(args.allowed_hosts or [])
    if args.host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        hosts.append(args.host)

    def ready(url: str) -> None:
        print(f"mcpsync: serving {server.name} at {url}", file=sys.stderr, flush=True)

    serve(server, args.host, args.port, path=args.path, allowed_hosts=hosts, ready=ready,
          timeout=args.timeout, max_connections=args.max_connections)
    return 0


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: use 0..65535 "
                                         f"(0: any free port)")
    return port


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcpsync", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="serve a Server over stdio")
    run.add_argument("server", help="MODULE_OR_FILE:OBJ")
    serve = sub.add_parser("serve", help="serve a Server over Streamable HTTP (development)")
    serve.add_argument("server", help="MODULE_OR_FILE:OBJ")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8000,
                       help="1..65535, or 0 for any free port (default 8000)")
    serve.add_argument("--path", default="/mcp")
    serve.add_argument("--allow-host", action="append", default=None, dest="allowed_hosts",
                       help="also accept this Host (repeatable; loopback is always allowed)")
    serve.add_argument("--timeout", type=_positive, default=10.0, metavar="SECONDS",
                       help="a request's line and headers must arrive within it (so an idle "
                            "connection lasts no longer); a read or write that stalls that "
                            "long ends the connection (default 10)")
    serve.add_argument("--max-connections", type=_count, default=256, metavar="N",
                       help="connections served at once, a thread each; more get 503 "
                            "(default 256)")
    for p in (run, serve):
        p.add_argument("--task-store", metavar="PATH", default=None,
                       help="keep tasks in this SQLite file (created if absent) instead of "
                            "in memory: they survive a restart and are shared by the "
                            "processes using the file")
    tools = sub.add_parser("tools", help="list the tools of a server")
    tools.add_argument("target")
    call = sub.add_parser("call", help="call a tool")
    call.add_argument("target")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object")
    for p in (tools, call):
        p.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    try:
        return _run(parser, args)
    except TargetError as exc:
        print(f"mcpsync: {exc}", file=sys.stderr)
        return USAGE


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "run":
        _with_task_store(load_server(args.server), args.task_store).run_stdio()
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
        client = _connect(args.target, args.timeout)
    except (FileNotFoundError, PermissionError) as exc:
        # Reported before anything was spawned (see SubprocessTransport): a usage error.
        print(f"mcpsync: {exc}", file=sys.stderr)
        return USAGE
    except MCPSyncError as exc:
        print(f"mcpsync: {exc}", file=sys.stderr)
        return 1
    try:
        with client:
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
