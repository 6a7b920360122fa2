"""``mcpsync apps preview TARGET TOOL [KEY=VALUE ... | JSON] [--port N]``: call a tool and
show its view in the browser, hosted by mcpsync (see :mod:`mcpsync.apps.host`).

Light at import (the ``mcpsync`` command imports it to build its parser): the host, the
client and the HTTP server are imported when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..cli import args as cli_args


def add_parser(sub: Any) -> None:
    """``apps`` (with its ``preview`` subcommand) on ``sub`` (argparse's subparsers)."""
    apps = sub.add_parser("apps", help="MCP Apps: show a tool's interactive view")
    verbs = apps.add_subparsers(dest="apps_command", required=True)
    preview = verbs.add_parser(
        "preview", help="call a tool and show its view in a local page (a browser host)")
    preview.add_argument("target", help="a URL, a command line, or MODULE_OR_FILE:OBJ (see "
                                        "mcpsync --help)")
    preview.add_argument("tool", help="the tool whose view to show")
    preview.add_argument("arguments", nargs="*", default=[], metavar="ARGS",
                         help="the tool's arguments, as for mcpsync call: KEY=VALUE words "
                              "or one JSON object")
    preview.add_argument("--host", default="127.0.0.1",
                         help="the address to serve the page on (default 127.0.0.1)")
    preview.add_argument("--port", type=cli_args.port, default=8300,
                         help="the page's port (default 8300; 0: any free port); the "
                              "view's sandbox is served on a second, free port")
    preview.add_argument("--timeout", type=cli_args.seconds, default=60.0, metavar="SECONDS",
                         help="deadline of each request to the server (default 60)")
    preview.add_argument("--header", type=cli_args.header, action="append", default=None,
                         metavar="NAME:VALUE",
                         help="add this header to every HTTP request (repeatable)")


def run(args: argparse.Namespace) -> int:
    """Run ``mcpsync apps preview``: serve until Ctrl-C."""
    from ..cli import values as cli_values
    from ..cli.output import stdout_to_stderr
    from ..cli.session import USAGE, Exit
    from ..cli.target import connect
    from ..client.options import HostHandlers
    from ..errors import MCPSyncError
    from ..facade import Server
    from ..server.signals import StopSignals
    from .host.preview import PreviewServers, preview_of
    from .host.view import find_tool
    from .wire import host_capabilities, view_uri

    words: list[str] = args.arguments
    given = cli_values.json_object(words[0]) if cli_values.is_json_object(words) else None
    loaded: list[Server] = []
    with stdout_to_stderr():
        try:
            client = connect(args.target, args.timeout,
                             headers=dict(args.header or ()) or None, loaded=loaded,
                             host=HostHandlers(extra_capabilities=host_capabilities()))
        except (FileNotFoundError, PermissionError) as exc:
            print(f"mcpsync: {exc}", file=sys.stderr)
            raise Exit(USAGE) from None
        except MCPSyncError as exc:
            print(f"mcpsync: {exc}", file=sys.stderr)
            raise Exit(1) from None
    try:
        with client:
            try:
                tool = find_tool(client, args.tool)
            except LookupError as exc:
                print(f"mcpsync: {exc}", file=sys.stderr)
                return 1
            if view_uri(tool) is None:
                print(f"mcpsync: the tool {args.tool!r} has no view (no _meta.ui.resourceUri)",
                      file=sys.stderr)
                return 1
            arguments = given if given is not None else cli_values.tool_arguments(
                cli_values.split_words(words), tool.input_schema, args.tool)
            try:
                servers = PreviewServers(preview_of(client, args.tool, arguments,
                                                    timeout=args.timeout),
                                         args.host, args.port).start()
            except OSError as exc:  # the port is taken, the address is not this machine's
                print(f"mcpsync: cannot serve the preview on {args.host}:{args.port}: "
                      f"{exc.strerror or exc}", file=sys.stderr)
                return 1
            print(f"mcpsync: the view of {args.tool} is at {servers.url} (Ctrl-C stops)",
                  file=sys.stderr, flush=True)
            try:
                with StopSignals() as signals:
                    servers.serve_forever(signals.run)
            finally:
                servers.close()
    finally:
        for server in loaded:
            server.stop()
    return 0


__all__ = ["add_parser", "run"]
