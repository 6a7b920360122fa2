"""The ``mcpsync`` command: serve a Server (stdio or HTTP), list a server's tools, call one.

The help text is :data:`HELP` (plain text: it is what ``mcpsync --help`` prints).
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
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ._version import __version__
from .cli_output import Reporter, as_json, result_text, tools_text
from .client import Client
from .errors import MCPSyncError
from .protocol.versions import LEGACY_VERSIONS, MODERN_VERSIONS
from .server.server import Server

#: Exit status for a TARGET/SERVER (or other argument) that can not be used.
USAGE = 2

HELP = """\
  mcpsync run SERVER [--task-store PATH]    serve a Server over stdio
  mcpsync run URL [--header K:V]            relay the HTTP server at URL over stdio (for a
                                            host that launches only stdio servers)
  mcpsync serve SERVER [--host H] [--port N] [--timeout S] [--max-connections N]
                       [--task-store PATH]  serve it over HTTP at http://H:N/mcp
                                            (a development server: werkzeug, threaded)
  mcpsync tools TARGET [--json]             list a server's tools
  mcpsync call TARGET TOOL [JSON_ARGS] [--json] [--log-level LEVEL]
                                            call a tool and print its result; the
                                            server's log messages and progress go to
                                            stderr

SERVER is MODULE_OR_FILE[:OBJ] (OBJ defaults to server): a Server in this process.

TARGET is one of
  - an http:// or https:// URL: a Streamable HTTP endpoint (either era; --header K:V adds
    a header to every request, and may be repeated; --auth oauth authorizes with OAuth 2.1
    in a browser when the server asks, keeping the tokens for the next run);
  - a command line that starts a stdio server, quoted as one argument ("python server.py");
  - MODULE_OR_FILE:OBJ, a Server loaded into this process (the colon is what says so);
  - one word without a colon: a program on PATH (or an executable file) to run, except a
    .py file without execute permission, which is loaded as FILE:server; either way the
    command says which it did.

--protocol-version picks the revision to speak (default: auto for a URL, probing for
2026-07-28 and falling back to the handshake; 2025-11-25 otherwise).
--json prints the tools or the result as JSON, in the wire's shape, for scripts.

--task-store PATH keeps the server's tasks in the SQLite file PATH (created if absent)
instead of in memory: they survive a restart, and processes sharing the file share them.

Exit status: 0 on success; 1 when the call failed (a tool error, a protocol error, no
server); 2 for a usage error (a TARGET or SERVER that can not be used, a bad option, a task
store that can not be opened), reported as one line on stderr.
"""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``mcpsync serve: ...``) and exit status 2,
    as every other usage error of the command is."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"mcpsync: {message} (see {self.prog} --help)\n")


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
            raise TargetError(f"{target}:{attr}() returned {_a(type(obj).__name__)}, not a "
                              f"mcpsync.Server")
    if not isinstance(obj, Server):
        raise TargetError(f"{target}:{attr} is {_a(type(obj).__name__)}, not a mcpsync.Server")
    return obj


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: "an int", "a str"."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _is_program(word: str) -> bool:
    if os.path.dirname(word):
        return os.path.isfile(word) and os.access(word, os.X_OK)
    return shutil.which(word) is not None


def _token_file() -> str:
    """Where ``--auth oauth`` keeps its tokens between runs (mode 0600, in a 0700 folder):
    ``$XDG_CACHE_HOME/mcpsync/oauth-tokens.json``, else under ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "mcpsync")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, "oauth-tokens.json")


def _oauth() -> tuple[Any, Callable[[], None]]:
    """An ``OAuth`` for a person at a terminal: the browser comes back to a loopback port
    this process listens on (RFC 8252); tokens are kept for the next run. Also the
    function that frees the port."""
    from .auth import FileTokenStorage, LoopbackRedirect, OAuth

    loopback = LoopbackRedirect()
    auth = OAuth(redirect_uri=loopback.redirect_uri, redirect_handler=loopback,
                 storage=FileTokenStorage(_token_file()))
    return auth, loopback.close


def _connect(target: str, timeout: float, *, headers: dict[str, str] | None = None,
             auth: str | None = None, **options: Any) -> Client:
    """Interpret TARGET (see :data:`HELP`) and connect to it; ``options`` go to the Client
    (``protocol_version``, ``on_log``, ``log_level``)."""
    options = {k: v for k, v in options.items() if v is not None}
    options["timeout"] = timeout
    if target.startswith(("http://", "https://")):
        if auth != "oauth":
            return Client.http(target, headers=headers, **options)
        oauth, free_port = _oauth()
        try:
            client = Client.http(target, headers=headers, auth=oauth, **options)
        except BaseException:
            free_port()
            raise
        weakref.finalize(client, free_port)
        return client
    if headers:
        raise TargetError("--header applies to an http:// or https:// TARGET only")
    if auth:
        raise TargetError("--auth applies to an http:// or https:// TARGET only")
    if not target.strip():
        raise TargetError("TARGET is empty")
    if any(c.isspace() for c in target.strip()):
        try:
            command = shlex.split(target)
        except ValueError as exc:
            raise TargetError(f"cannot split the command line {target!r}: {exc}") from None
        return Client.stdio(command, **options)
    if ":" in target:
        return Client.memory(load_server(target), **options)
    if target.endswith(".py") and os.path.isfile(target) and not _is_program(target):
        print(f"mcpsync: loading {target}:server in this process (to run it as a command "
              f"instead, write \"python {target}\")", file=sys.stderr)
        return Client.memory(load_server(target), **options)
    if _is_program(target):
        if target.endswith(".py"):
            print(f"mcpsync: running {target} as a command (to load it in this process "
                  f"instead, write {target}:server)", file=sys.stderr)
        return Client.stdio([target], **options)
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
    try:
        server.task_store = store
    except RuntimeError as exc:  # the server's tasks were set up when its file was loaded
        raise TargetError(f"cannot use {path!r} as the task store: {exc}") from None
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


def _header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not name or any(c in name for c in " \t()<>@,;:\\\"/[]?={}") or any(
            c in text for c in "\r\n\0"):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME:VALUE (e.g. "
                                         f"'Authorization: Bearer TOKEN')")
    return name, value


VERSIONS = (*MODERN_VERSIONS, *LEGACY_VERSIONS, "auto")


def _version(text: str) -> str:
    if text not in VERSIONS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(VERSIONS)}")
    return text


def _level(text: str) -> str:
    from .protocol.levels import LEVELS

    if text not in LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LEVELS)}")
    return text


def _seconds(text: str) -> float:
    try:
        return _positive(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds"
                                         ) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="mcpsync", description=HELP,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mcpsync {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="serve a Server over stdio (or relay an HTTP server)")
    run.add_argument("server", help="MODULE_OR_FILE:OBJ, or the http(s):// URL of a server "
                                    "to relay over stdio")
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
    call.add_argument("--log-level", type=_level, default=None, metavar="LEVEL",
                      help="the least severe log message to show (default: all the server "
                           "sends)")
    for p in (tools, call):
        p.add_argument("--timeout", type=_seconds, default=60.0, metavar="SECONDS",
                       help="deadline of each request (default 60)")
    for p in (tools, call, run):
        p.add_argument("--header", type=_header, action="append", default=None,
                       metavar="NAME:VALUE",
                       help="add this header to every HTTP request (repeatable)")
    for p in (tools, call):
        p.add_argument("--protocol-version", type=_version, default=None, metavar="VERSION",
                       help=f"one of {', '.join(VERSIONS)}")
        p.add_argument("--json", action="store_true",
                       help="print JSON in the wire's shape (for scripts)")
        p.add_argument("--auth", choices=["oauth"], default=None,
                       help="authorize with OAuth 2.1 when the server asks (a browser "
                            "window; tokens are kept for the next run)")
    args = parser.parse_args(argv)
    try:
        return _run(parser, args)
    except TargetError as exc:
        print(f"mcpsync: {exc}", file=sys.stderr)
        return USAGE


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "run":
        if args.server.startswith(("http://", "https://")):
            if args.task_store is not None:
                raise TargetError("--task-store is for a SERVER run here, not a URL relayed")
            from .bridge import run_bridge

            run_bridge(args.server, headers=dict(args.header or ()) or None)
            return 0
        if args.header:
            raise TargetError("--header applies to an http:// or https:// URL only")
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
    reporter = Reporter(args.tool) if args.command == "call" else None
    try:
        client = _connect(args.target, args.timeout, headers=dict(args.header or ()) or None,
                          auth=args.auth, protocol_version=args.protocol_version,
                          on_log=reporter.log if reporter is not None else None,
                          log_level=getattr(args, "log_level", None))
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
                tools = client.list_tools()
                print(as_json(tools) if args.json else tools_text(tools))
                return 0
            assert reporter is not None
            try:
                result = client.call_tool(args.tool, arguments, on_progress=reporter.progress)
            finally:
                reporter.close()
    except MCPSyncError as exc:
        print(f"mcpsync: {exc}", file=sys.stderr)
        return 1
    # After close: every log message and progress update has been printed by now.
    print(as_json(result) if args.json else result_text(result))
    if result.is_error:
        if not args.json:
            print(f"mcpsync: the tool {args.tool!r} reported an error", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
