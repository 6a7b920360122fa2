"""What a TARGET or SERVER argument of the ``mcpsync`` command names, and connecting to it.

A TARGET is a URL, a command line, ``MODULE_OR_FILE:OBJ``, one word or ``HOST:NAME`` (a
server configured in a host, :mod:`mcpsync.hosts`; see ``mcpsync
--help``); every client subcommand (``tools``, ``call``, ``resources``, ``read``,
``prompts``, ``prompt``, ``inspect``) connects through :func:`connect`, so the forms and
their errors are the same for all of them. Something that can not be used is a
:class:`UsageError`: one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..client import Client
from ..facade import Server
from ..hosts import HostError, find, is_host_target
from ..hub.config import ServerEntry
from ..transports.subprocess import command_line


class UsageError(ValueError):
    """An argument of the command that can not be used (a TARGET, an option, a tool
    argument of the wrong type); ``main`` prints it as one line and exits with status 2."""


class TargetError(UsageError):
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
    """Import ``module:attr`` or ``path/to/file.py:attr`` (attr defaults to ``server``,
    else to the module's one ``Server`` whatever its name).

    Raises :class:`TargetError` (one line, no traceback) when that is not a ``Server``: a
    missing file or module, an import that fails, a missing attribute, another kind of
    object. A callable that is not a ``Server`` is called, and must return one.
    """
    return locate_server(spec)[0]


def locate_server(spec: str) -> tuple[Server, str]:
    """:func:`load_server`, with the name of the object it used (``server``, or the
    module's one ``Server`` by its own name), for a message that names what is served."""
    if not spec.strip() or any(c.isspace() for c in spec):
        raise TargetError(f"{spec!r} is not MODULE_OR_FILE[:OBJ] (a command line such as "
                          f"'python server.py' is a TARGET for tools and call, not a SERVER)")
    target, _, named = spec.partition(":")
    attr = named or "server"
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
            if not named and len(servers) == 1:
                # No OBJ said, and the one Server is not called ``server``: it is the one.
                attr = servers[0]
                obj = getattr(module, attr)
                break
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
    return obj, attr


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
    from ..auth import FileTokenStorage, LoopbackRedirect, OAuth

    loopback = LoopbackRedirect()
    auth = OAuth(redirect_uri=loopback.redirect_uri, redirect_handler=loopback,
                 storage=FileTokenStorage(_token_file()))
    return auth, loopback.close


def configured(target: str) -> ServerEntry:
    """The server ``HOST:NAME`` names in that host's configuration (see
    :mod:`mcpsync.hosts`); what is configured there, in one line, when it names none."""
    try:
        return find(target)
    except HostError as exc:
        raise TargetError(str(exc)) from None


def run_configured(target: str, header: list[tuple[str, str]] | None,
                   timeout: float | None) -> int:
    """``mcpsync run HOST:NAME``: a configured command runs here, its stdin and stdout
    this process's (its exit status is the command's); a configured URL is relayed over
    stdio as ``mcpsync run URL`` relays it, with its headers."""
    import subprocess

    entry = configured(target)
    if entry.kind == "http":
        from ..bridge import run_bridge

        run_bridge(entry.url or "", headers={**entry.headers, **dict(header or ())} or None,
                   head_timeout=timeout)
        return 0
    if header or timeout is not None:
        raise TargetError(f"--header and --timeout apply to an HTTP server; {target} is a "
                          f"command")
    try:
        return subprocess.call(list(entry.command), env={**os.environ, **entry.env},
                               cwd=entry.cwd)
    except OSError as exc:
        raise TargetError(f"{target}: cannot run {entry.command[0]!r}: {exc.strerror or exc}"
                          ) from None


def connect(target: str, timeout: float, *, headers: dict[str, str] | None = None,
             auth: str | None = None, loaded: list[Server] | None = None,
             **options: Any) -> Client:
    """Interpret TARGET (see :data:`HELP`) and connect to it; ``options`` go to the Client
    (``protocol_version``, ``on_log``, ``log_level``). A Server loaded into this process is
    appended to ``loaded``: the caller stops it (its shutdown would otherwise wait for the
    interpreter's exit, after the command's output)."""
    loaded = loaded if loaded is not None else []
    options = {k: v for k, v in options.items() if v is not None}
    options["timeout"] = timeout
    if is_host_target(target):
        entry = configured(target)
        if entry.kind == "stdio":
            if headers or auth:
                raise TargetError(f"--header and --auth apply to an HTTP server; {target} "
                                  f"is a command")
            return Client.stdio(list(entry.command), env=dict(entry.env) or None,
                                cwd=entry.cwd, **options)
        target, headers = entry.url or "", {**entry.headers, **(headers or {})} or None
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
            command = command_line(target)  # as Client.stdio and Server.proxy split it
        except ValueError as exc:
            raise TargetError(str(exc)) from None
        return Client.stdio(command, **options)
    if ":" in target:
        loaded.append(load_server(target))
        return Client.memory(loaded[-1], **options)
    if target.endswith(".py") and os.path.isfile(target) and not _is_program(target):
        server, used = locate_server(target)
        loaded.append(server)
        # After loading: the notice names the object served (the one Server may have a
        # name of its own).
        print(f"mcpsync: loading {target}:{used} in this process (to run it as a command "
              f"instead, write \"python {target}\")", file=sys.stderr)
        return Client.memory(server, **options)
    if _is_program(target):
        if target.endswith(".py"):
            print(f"mcpsync: running {target} as a command (to load it in this process "
                  f"instead, write {target}:server)", file=sys.stderr)
        return Client.stdio([target], **options)
    raise TargetError(f"{target!r} is neither a command on PATH nor MODULE_OR_FILE:OBJ (for "
                      f"a Server in this process write {target}:server; for a command line "
                      f"quote it with its arguments)")
