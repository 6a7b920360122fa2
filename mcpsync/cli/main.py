"""The ``mcpsync`` command: serve a Server (stdio or HTTP), or reach one as a client: list
and call its tools, list and read its resources, list and get its prompts, inspect it all.

The help text is :data:`HELP` (plain text: it is what ``mcpsync --help`` prints). The client
subcommands live in :mod:`mcpsync.cli.surface`, TARGETs in :mod:`mcpsync.cli.target`.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from typing import NoReturn

from .._version import __version__
from ..apps import cli as cli_apps
from ..errors import MCPSyncError
from ..facade import Server
from ..hosts import is_host_target
from ..server.lifespan import StartupError
from . import args as cli_args
from . import dev as cli_dev
from . import hosts as cli_hosts
from . import surface as cli_surface
from .output import stdout_to_stderr
from .session import USAGE, Exit
from .target import TargetError, UsageError, load_server, run_configured

HELP = """\
  mcpsync run SERVER [--task-store PATH]    serve a Server over stdio
  mcpsync run URL [--header K:V] [--timeout S]
                                            relay the HTTP server at URL over stdio (for a
                                            host that launches only stdio servers)
  mcpsync serve SERVER [--host H] [--port N] [--timeout S] [--max-connections N]
                       [--task-store PATH]  serve it over HTTP at http://H:N/mcp
                                            (a development server: one thread reads
                                            requests, a pool of threads answers them)
  mcpsync tools TARGET                      list a server's tools
  mcpsync call TARGET TOOL [KEY=VALUE ... | JSON] [--log-level LEVEL]
                                            call a tool and print its result; the
                                            server's log messages and progress go to
                                            stderr
  mcpsync resources TARGET                  list its resources and resource templates
  mcpsync read TARGET URI                   read a resource and print its contents
  mcpsync prompts TARGET                    list its prompts and their arguments
  mcpsync prompt TARGET NAME [KEY=VALUE ... | JSON]
                                            get a prompt and print its messages
  mcpsync inspect TARGET                    everything it offers: server info, protocol,
                                            capabilities, instructions, tools (with
                                            their parameters), resources, templates,
                                            prompts
  mcpsync install HOST TARGET [--name NAME] [--with PKG] [--env K=V] [--config PATH]
                                            add a server to a host's configuration (HOST:
                                            claude-desktop, claude-code, cursor, vscode;
                                            mcp-json prints the entry instead)
  mcpsync discover [HOST ...] [--json]      list the servers configured in those hosts,
                                            as HOST:NAME targets
  mcpsync dev TARGET [--port N] [--watch DIR]
                                            serve it over HTTP and restart it whenever a
                                            file under its folder changes; prints how to
                                            open the MCP Inspector on it
  mcpsync apps preview TARGET TOOL [KEY=VALUE ... | JSON] [--port N]
                                            call a tool and show its MCP Apps view in a
                                            local page (the bridge and sandbox of a
                                            browser host)

SERVER is MODULE_OR_FILE[:OBJ] (OBJ defaults to server): a Server in this process.

TARGET is one of
  - an http:// or https:// URL: a Streamable HTTP endpoint (either era; --header K:V adds
    a header to every request, and may be repeated; --auth oauth authorizes with OAuth 2.1
    in a browser when the server asks, keeping the tokens for the next run);
  - a command line that starts a stdio server, quoted as one argument ("python server.py");
  - MODULE_OR_FILE:OBJ, a Server loaded into this process (the colon is what says so; what
    it prints goes to stderr, as over stdio, so stdout is only this command's output);
  - one word without a colon: a program on PATH (or an executable file) to run, except a
    .py file without execute permission, which is loaded as FILE:server; either way the
    command says which it did;
  - HOST:NAME, a server configured in a host (claude-desktop:calc, cursor:weather; see
    mcpsync discover): its command or URL, with its env and headers.

Every TARGET command takes --timeout S, --header K:V, --auth oauth, --json and
--protocol-version, which picks the revision to speak (default: auto for a URL, probing
for 2026-07-28 and falling back to the handshake; 2025-11-25 otherwise). --json prints
JSON in the wire's shape, for scripts.

Arguments of call are KEY=VALUE words, each value typed by the tool's input schema (a=1 is
a number for an integer or number parameter but the text "1" for a string one; true/false
for a boolean; JSON for an object or array; null for a nullable one), or one JSON object.
A key the schema does not name is a usage error unless the schema allows other keys
(additionalProperties), where it is JSON when it parses, else text. A value that does not
fit its parameter is a usage error. Arguments of prompt are KEY=VALUE words, always text.

--task-store PATH keeps the server's tasks in the SQLite file PATH (created if absent)
instead of in memory: they survive a restart, and processes sharing the file share them.

Exit status: 0 on success; 1 when the call failed (a tool error, a protocol error, a
missing resource or prompt, no server); 2 for a usage error (a TARGET or SERVER that can
not be used, a bad option or argument, a task store that can not be opened), reported as
one line on stderr.
"""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``mcpsync serve: ...``) and exit status 2,
    as every other usage error of the command is."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"mcpsync: {message} (see {self.prog} --help)\n")


def _with_task_store(server: Server, path: str | None) -> Server:
    """``server`` with its tasks kept in the SQLite file ``path`` (if given). Opened before
    serving, so a path that can not be used is a usage error, not a failure later."""
    if path is None:
        return server
    from ..tasks.sqlite import SqliteTaskStore

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
    from ..http import serve
    from ..http.intake import LOOPBACK

    server = _with_task_store(load_server(args.server), args.task_store)
    hosts = list(LOOPBACK) + list(args.allowed_hosts or [])
    if args.host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        hosts.append(args.host)

    def ready(url: str) -> None:
        print(f"mcpsync: serving {server.name} at {url}", file=sys.stderr, flush=True)

    serve(server, args.host, args.port, path=args.path, allowed_hosts=hosts, ready=ready,
          timeout=args.timeout, max_connections=args.max_connections)
    return 0


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
    serve.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default 127.0.0.1: this machine "
                            "only; 0.0.0.0 or :: listens on every interface, then name the "
                            "Host that clients use with --allow-host)")
    serve.add_argument("--port", type=cli_args.port, default=8000,
                       help="1..65535, or 0 for any free port (default 8000)")
    serve.add_argument("--path", default="/mcp",
                       help="the endpoint's URL path (default /mcp)")
    serve.add_argument("--allow-host", action="append", default=None, dest="allowed_hosts",
                       metavar="HOST",
                       help="also accept this Host (repeatable; loopback is always allowed)")
    serve.add_argument("--timeout", type=cli_args.positive, default=10.0, metavar="SECONDS",
                       help="a request's line, headers and body must all arrive within it, "
                            "counted from the connection's start (or the previous response): "
                            "else 408 and closed, so sending slowly does not extend it; an idle "
                            "connection is closed after it; a response write that stalls "
                            "that long ends the connection (default 10)")
    serve.add_argument("--max-connections", type=cli_args.count, default=256, metavar="N",
                       help="requests served at once, a handler thread each (a connection "
                            "still sending its request, or idle, holds none); one more gets "
                            "503 at once (default 256)")
    for p in (run, serve):
        p.add_argument("--task-store", metavar="PATH", default=None,
                       help="keep tasks in this SQLite file (created if absent) instead of "
                            "in memory: they survive a restart and are shared by the "
                            "processes using the file")
    cli_surface.add_parsers(sub)
    cli_hosts.add_parsers(sub)
    cli_dev.add_parser(sub)
    cli_apps.add_parser(sub)
    run.add_argument("--header", type=cli_args.header, action="append", default=None,
                     metavar="NAME:VALUE",
                     help="add this header to every HTTP request to the URL relayed "
                          "(repeatable)")
    run.add_argument("--timeout", type=cli_args.seconds, default=None, metavar="SECONDS",
                     help="URL only: each relayed request's answer must begin (connect, "
                          "head, a JSON answer whole) within it, else the host gets an "
                          "error; a streamed answer then lasts until the host cancels "
                          "(default 80)")
    words = sys.argv[1:] if argv is None else list(argv)
    if not words:  # the command alone: what it can do, not an error about what is missing
        parser.print_help()
        return 0
    args = parser.parse_args(words)
    try:
        return _run(args)
    except UsageError as exc:
        print(f"mcpsync: {exc}", file=sys.stderr)
        return USAGE
    except StartupError as exc:
        _startup_failed(exc)
        return 1
    except Exit as exc:
        return exc.status


def _startup_failed(exc: StartupError) -> None:
    """A server loaded here failed to start: one line, after the traceback of what raised
    when that is the user's code (a bug to find), not when it is one of mcpsync's own
    errors (a refused connection, say: its message says it all)."""
    import traceback

    cause: BaseException | None = exc
    while isinstance(cause, StartupError):
        cause = cause.__cause__
    if cause is not None and not isinstance(cause, MCPSyncError):
        traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
    print(f"mcpsync: {exc}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    if args.command == "run":
        if is_host_target(args.server):
            return run_configured(args.server, args.header, args.timeout)
        if args.server.startswith(("http://", "https://")):
            if args.task_store is not None:
                raise TargetError("--task-store is for a SERVER run here, not a URL relayed")
            from ..bridge import run_bridge

            run_bridge(args.server, headers=dict(args.header or ()) or None,
                       head_timeout=args.timeout)
            return 0
        if args.header or args.timeout is not None:
            option = "--header" if args.header else "--timeout"
            raise TargetError(f"{option} applies to an http:// or https:// URL only")
        with stdout_to_stderr():  # stdout is the protocol stream, even while importing
            server = _with_task_store(load_server(args.server), args.task_store)
        server.run_stdio()
        return 0
    if args.command == "serve":
        return _serve(args)
    if args.command in ("install", "discover"):
        return cli_hosts.run(args)
    if args.command == "dev":
        return cli_dev.run(args)
    if args.command == "apps":
        return cli_apps.run(args)
    return cli_surface.run(args)


if __name__ == "__main__":
    sys.exit(main())
