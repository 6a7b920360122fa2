"""The one path every client subcommand of ``mcpsync`` takes: connect to TARGET, do one
thing with the client, close, and report a failure as words on stderr.

Each subcommand (``tools``, ``call``, ``resources``, ``read``, ``prompts``, ``prompt``,
``inspect``) is an *action*: a function of the connected :class:`~mcpsync.Client` that
returns what to print. :func:`ask` runs it with a server loaded into this process printing
to stderr (:func:`~mcpsync.cli.output.stdout_to_stderr`) from its import to its shutdown,
so that stdout is only the command's output, printed after. A failure is printed here and
raised as :class:`Exit` with the command's exit status.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from ..client import Client
from ..client.negotiate import NotAnMCPServerError
from ..errors import MCPSyncError, ServerExitedError
from ..facade import Server
from .output import safe, stdout_to_stderr
from .target import connect

T = TypeVar("T")

#: Exit status for a usage error (a TARGET that can not be used, a bad option or argument).
USAGE = 2


class Exit(Exception):
    """The command ends with ``status``; what went wrong has been printed on stderr."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def ask(args: argparse.Namespace, action: Callable[[Client], T], *,
        on_log: Callable[[Any], None] | None = None) -> T:
    """Connect to ``args.target`` with the common options (``--timeout``, ``--header``,
    ``--auth``, ``--protocol-version``, and ``--log-level`` where the command has it), run
    ``action`` on the client and close it. A server loaded into this process is stopped
    before returning, so its shutdown runs (and prints) before the output."""
    loaded: list[Server] = []
    with stdout_to_stderr():
        try:
            return _ask(args, action, on_log, loaded)
        finally:
            for server in loaded:
                server.stop()


def _ask(args: argparse.Namespace, action: Callable[[Client], T],
         on_log: Callable[[Any], None] | None, loaded: list[Server]) -> T:
    try:
        client = connect(args.target, args.timeout, headers=dict(args.header or ()) or None,
                         auth=args.auth, loaded=loaded, protocol_version=args.protocol_version,
                         on_log=on_log, log_level=getattr(args, "log_level", None))
    except (FileNotFoundError, PermissionError) as exc:
        # Reported before anything was spawned (see SubprocessTransport): a usage error.
        _say(str(exc))
        raise Exit(USAGE) from None
    except NotAnMCPServerError as exc:
        _say(f"`{args.target}` is not an MCP server: {exc.detail}")
        raise Exit(1) from None
    except ServerExitedError as exc:
        if exc.stray_output is not None:
            _say(f"`{args.target}` is not an MCP server: it wrote {exc.stray_output!r} on "
                 f"stdout (not a JSON-RPC message), then "
                 f"{ServerExitedError.describe(exc.returncode)}")
        else:
            _server_exited(exc)
        raise Exit(1) from None
    except MCPSyncError as exc:
        _say(str(exc))
        raise Exit(1) from None
    try:
        with client:
            return action(client)
    except ServerExitedError as exc:
        _server_exited(exc)
        raise Exit(1) from None
    except MCPSyncError as exc:
        _say(str(exc))
        raise Exit(1) from None


def _server_exited(exc: ServerExitedError) -> None:
    """How a stdio server ended, and what was run. Its stderr lines were shown as they came
    (``[server.py] line``: nothing in the command configures logging), so they are not
    repeated here."""
    lines = [exc.reason, f"  command: {shlex.join(exc.command)}"]
    if exc.stray_output is not None:
        lines.append(f"  it wrote on stdout (not JSON-RPC): {exc.stray_output!r}")
    lines.append("  (its stderr is above)" if exc.stderr_tail else "  (nothing on its stderr)")
    _say("\n".join(lines))


def _say(text: str) -> None:
    """``mcpsync: text`` on stderr; the text may quote the server, so it is made safe."""
    print(f"mcpsync: {safe(text)}", file=sys.stderr)
