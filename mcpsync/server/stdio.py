"""Serving a Server over this process's stdin and stdout.

The stdout file descriptor is the protocol channel, so nothing else may write to it. On
entry the real stdout is duplicated to a private descriptor for protocol messages, and fd 1
(plus ``sys.stdout``) is pointed at stderr: a stray ``print`` — even one from a C extension
or a child process — lands in the host's log instead of corrupting the stream.

The server stops at EOF on stdin, on SIGINT or SIGTERM, and when its parent process exits
(checked twice a second), so a crashed host leaves no orphaned server behind. It also stops
when the host stops reading its stdout: a message that can not be written within
``write_timeout`` (30 s) ends the session, instead of every handler blocking on its answer.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any, BinaryIO, Protocol, TextIO

from ..transports.base import Transport
from ..transports.stream import WRITE_TIMEOUT, StreamTransport
from .session import ServerSession
from .signals import StopSignals


class StdioHost(Protocol):
    """What serving over stdio needs of the server (a ``Server``): its startup, one
    session, and its shutdown."""

    def start(self) -> Any: ...

    def connect(self, transport: Transport, *, name: str = ...,
                drain_timeout: float = ...) -> ServerSession: ...

    def stop(self) -> None: ...

logger = logging.getLogger("mcpsync.server")

#: The parent process as early as we can see it (mcpsync's import): a host that dies while
#: the server is still starting up has re-parented it before serve_stdio runs. Only for
#: this process: a child forked after the import has its own parent.
_AT_IMPORT = (os.getpid(), os.getppid())


def serve_stdio(server: StdioHost, *, drain_timeout: float = 2.0,
                write_timeout: float = WRITE_TIMEOUT) -> None:
    """Block serving one client on stdin/stdout; return at EOF, SIGINT or SIGTERM, or when
    a message to the client could not be written in ``write_timeout`` seconds (it stopped
    reading our stdout: its handlers would otherwise wait for ever to answer)."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    saved_stdout_fd = os.dup(1)
    os.dup2(2, 1)
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr
    writer = os.fdopen(protocol_fd, "wb", buffering=0)
    try:
        # Startup before the first message is read (a print in it lands on stderr); one
        # that fails ends the process with its error instead of serving nothing.
        server.start()
    except BaseException:
        _restore(writer, saved_stdout, saved_stdout_fd)
        raise
    # The handlers go in before the session starts reading: once a client has had an
    # answer, a SIGTERM must find them (it used to land in between and kill the process
    # without its shutdown). One that arrives before serving starts is noted and served.
    # A host that made us ignore Ctrl-C keeps it that way; SIGTERM always stops us.
    signals = StopSignals(honour_ignored=(signal.SIGINT,))
    signals.install()
    transport = StreamTransport(0, writer, write_timeout=write_timeout, peer="the client")
    try:
        session = server.connect(transport, name="mcpsync-stdio", drain_timeout=drain_timeout)
    except BaseException:
        signals.restore()
        _restore(writer, saved_stdout, saved_stdout_fd)
        raise
    parent = _AT_IMPORT[1] if os.getpid() == _AT_IMPORT[0] else os.getppid()

    def serve() -> None:
        # Slices keep the main thread responsive to signals on every platform, and let it
        # notice a host that died without closing our stdin (a grandchild or a sibling
        # still holds the pipe): we have been re-parented, and nobody will read us again.
        while not session.wait_closed(0.5):
            if os.getppid() != parent:
                logger.warning("stdio server stopping: its parent process %d has exited",
                               parent)
                return

    try:
        if not signals.run(serve):
            logger.info("stdio server stopping on signal")
        elif transport.stalled is not None:
            logger.warning("stdio server stopping: %s", transport.stalled)
        signals.pending = False  # that signal is served by the shutdown below, not cut by it
        if not signals.run(lambda: session.close(timeout=drain_timeout + 1.0)):
            # Handlers still running were cancelled; their threads do not hold the exit.
            logger.info("stdio server: shutdown cut short by a signal")
    finally:
        signals.armed = False
        try:
            # Shutdown hooks, after the session is closed (no handler still needs them)
            # and while a second signal is still caught (it cannot cut them short).
            server.stop()
        finally:
            signals.restore()
            _restore(writer, saved_stdout, saved_stdout_fd)


def _restore(writer: BinaryIO, saved_stdout: TextIO, saved_stdout_fd: int) -> None:
    """Give stdout back: close the protocol stream, point fd 1 where it was."""
    try:
        writer.close()
    except OSError:
        pass
    sys.stdout = saved_stdout
    os.dup2(saved_stdout_fd, 1)
    os.close(saved_stdout_fd)
