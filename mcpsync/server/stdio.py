"""Serving a Server over this process's stdin and stdout.

The stdout file descriptor is the protocol channel, so nothing else may write to it. On
entry the real stdout is duplicated to a private descriptor for protocol messages, and fd 1
(plus ``sys.stdout``) is pointed at stderr: a stray ``print`` — even one from a C extension
or a child process — lands in the host's log instead of corrupting the stream.

The server stops at EOF on stdin, on SIGINT or SIGTERM, and when its parent process exits
(checked twice a second), so a crashed host leaves no orphaned server behind.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, BinaryIO, TextIO

from ..transports.stream import StreamTransport

if TYPE_CHECKING:
    from .server import Server

logger = logging.getLogger("mcpsync.server")

#: The parent process as early as we can see it (mcpsync's import): a host that dies while
#: the server is still starting up has re-parented it before serve_stdio runs. Only for
#: this process: a child forked after the import has its own parent.
_AT_IMPORT = (os.getpid(), os.getppid())


class _Stop(Exception):
    """Raised in the main thread by :class:`_Signals`, only where it is caught."""


class _Signals:
    """SIGINT and SIGTERM while serving, in the main thread.

    A signal raises :class:`_Stop` only while *armed*, that is inside a block that catches
    it; anywhere else it is only noted. So a signal can never escape serve_stdio with a
    traceback (nor skip giving stdout back), whenever it comes: while serving it stops the
    server; during the final drain (the spec's shutdown: close stdin, wait, then SIGTERM)
    it cuts the drain short; after that it is ignored.
    """

    def __init__(self) -> None:
        self.armed = False
        self.pending = False
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signum == signal.SIGINT and signal.getsignal(signum) is signal.SIG_IGN:
                continue  # a host that made us ignore Ctrl-C keeps it that way
            self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            if previous is not None:  # None: not installed from Python; nothing to put back
                signal.signal(signum, previous)  # type: ignore[arg-type]  # signal() gave it

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.pending = True
        if self.armed:
            self.armed = False
            raise _Stop()

    def run(self, step: Callable[[], object]) -> bool:
        """Run ``step()``; False when a signal (now, or one noted before) cut it short."""
        try:
            self.armed = True
            if self.pending:
                raise _Stop()
            step()
            self.armed = False
            return True
        except (_Stop, KeyboardInterrupt):
            self.armed = False
            return False


def serve_stdio(server: Server, *, drain_timeout: float = 2.0) -> None:
    """Block serving one client on stdin/stdout; return at EOF, SIGINT or SIGTERM."""
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
    signals = _Signals()
    if threading.current_thread() is threading.main_thread():
        signals.install()
    transport = StreamTransport(0, writer)
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
