"""``mcpsync dev TARGET``: serve a Server over HTTP and restart it whenever one of its
files changes, so that an edit is live at the next request; and say how to open the MCP
Inspector on it.

Why a child process per run: a restart must forget every module the server imported
(an in-process reload keeps stale objects alive in the modules that imported them), so
the server runs as ``python -m mcpsync serve SPEC`` and a change ends that process and
starts another on the same port (the Inspector's connection then finds it again). The
files are watched with ``watchfiles`` (the ``watch`` extra: the watcher uvicorn and others
use, on the operating system's change notifications), Python files under the server's
folder by default, more with ``--watch``.

Threads: the main thread watches and restarts; one ``mcpsync-dev-output`` thread per
child copies its stderr to ours, and is joined when that child ends.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from . import args as cli_args
from .target import TargetError, configured

#: How long a child is given to end after SIGTERM, then after SIGKILL.
STOP_TIMEOUT = 5.0
_SERVING = re.compile(r"^mcpsync: serving (?P<name>.*) at (?P<url>https?://\S+)$")
INSPECTOR = ("open the MCP Inspector: npx @modelcontextprotocol/inspector (its page is "
             "http://localhost:6274), then choose the transport Streamable HTTP and the URL "
             "{url}")


def add_parser(sub: Any) -> None:
    dev = sub.add_parser("dev", help="serve a Server over HTTP, restarted whenever its "
                                     "files change (development)")
    dev.add_argument("target", metavar="TARGET",
                     help="a SERVER (FILE[:OBJ] or MODULE:OBJ), or HOST:NAME of a server "
                          "a host runs with `mcpsync run SERVER` (as mcpsync install "
                          "writes it)")
    dev.add_argument("--host", default="127.0.0.1", help="the address to listen on "
                                                         "(default 127.0.0.1)")
    dev.add_argument("--port", type=cli_args.port, default=8000,
                     help="the port (default 8000; 0: a free one, kept across restarts)")
    dev.add_argument("--watch", action="append", default=[], metavar="DIR",
                     help="also watch this folder (repeatable; default: the server file's "
                          "folder, or the current one for a module)")


def server_spec(target: str) -> str:
    """The SERVER a dev TARGET serves: the TARGET itself, or the ``mcpsync run SERVER``
    of a configured server."""
    from ..hosts import is_host_target

    if not is_host_target(target):
        if target.startswith(("http://", "https://")) or any(c.isspace() for c in target):
            raise TargetError("dev serves a SERVER (FILE[:OBJ] or MODULE:OBJ) it can "
                              "restart; a URL or a command line is not one")
        return target
    entry = configured(target)
    words = list(entry.command)
    for i in range(len(words) - 2):
        if words[i].endswith("mcpsync") and words[i + 1] == "run":
            return words[i + 2]
    raise TargetError(f"{target} runs {words[0]!r}, not `mcpsync run SERVER`: dev needs "
                      f"the SERVER itself (give FILE[:OBJ])")


def watched(spec: str, extra: list[str]) -> list[Path]:
    """The folders to watch: the server file's (a module's: the current folder), and
    ``extra``."""
    target = spec.partition(":")[0]
    path = Path(target)
    base = path.resolve().parent if path.suffix == ".py" or path.is_file() else Path.cwd()
    if path.suffix == ".py" and not path.is_file():
        raise TargetError(f"no such file: {target}")
    folders = [base, *(Path(d).resolve() for d in extra)]
    for folder in folders:
        if not folder.is_dir():
            raise TargetError(f"cannot watch {folder}: not a folder")
    return folders


class _Child:
    """One run of the server: the process and the thread that relays its stderr (and
    reads the URL it serves at from it)."""

    def __init__(self, spec: str, host: str, port: int, *, hint: bool) -> None:
        command = [sys.executable, "-m", "mcpsync", "serve", spec, "--host", host,
                   "--port", str(port)]
        #: The port it serves on, once it said (a restart keeps it: the Inspector stays).
        self.port: int | None = None
        self._hint = hint
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, bufsize=1)
        assert self.process.stderr is not None
        self._relay = threading.Thread(target=self._read, args=(self.process.stderr,),
                                       name="mcpsync-dev-output", daemon=True)
        self._relay.start()

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                match = _SERVING.match(line.rstrip("\n"))
                if match is None or self.port is not None:
                    sys.stderr.write(line)
                    sys.stderr.flush()
                    continue
                url = match.group("url")
                self.port = urlsplit(url).port
                print(f"mcpsync dev: serving {match.group('name')} at {url}", flush=True)
                if self._hint:
                    print(f"mcpsync dev: {INSPECTOR.format(url=url)}", flush=True)
        finally:
            stream.close()

    def stop(self) -> int | None:
        """End the process (SIGTERM, then SIGKILL, each bounded) and join the relay."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT)
        self._relay.join(STOP_TIMEOUT)
        return self.process.returncode


def run(args: argparse.Namespace) -> int:
    try:
        from watchfiles import PythonFilter, watch
    except ImportError:
        raise TargetError("dev needs watchfiles: pip install 'mcpsync[watch]'") from None
    spec = server_spec(args.target)
    folders = watched(spec, args.watch)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a terminated dev ends its child
    child = _Child(spec, args.host, args.port, hint=True)
    print(f"mcpsync dev: watching {', '.join(map(str, folders))} (Ctrl-C to stop)",
          flush=True)
    try:
        for changes in watch(*folders, watch_filter=PythonFilter(), raise_interrupt=True):
            names = sorted({os.path.basename(path) for _, path in changes})
            print(f"mcpsync dev: {', '.join(names)} changed: restarting", flush=True)
            child.stop()
            port = child.port if child.port is not None else args.port
            child = _Child(spec, args.host, port, hint=False)
    except KeyboardInterrupt:
        pass
    finally:
        child.stop()
        signal.signal(signal.SIGTERM, previous)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


__all__ = ["INSPECTOR", "STOP_TIMEOUT", "add_parser", "run", "server_spec", "watched"]
