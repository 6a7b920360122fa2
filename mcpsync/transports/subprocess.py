"""The client side of stdio: a server running as a child process.

The child's stdout is the protocol stream. Its stderr is drained on a thread in 64 KiB
reads (a read per byte managed ~1 MiB/s and a full core, so a server that logs megabytes
before answering stalled the call) and split into lines for the ``mcpsync.server_stderr``
logger (or a file you pass). A chatty server can never block on a full stderr pipe, and
nothing needs ``sys.stderr.fileno()``, which Jupyter does not have.

A server's stderr is where it says what went wrong, so it must be visible without any
setup: while the application has configured no handler for that logger (none on it, its
ancestors or the root), the lines are written to ``sys.stderr`` as ``[server.py] line``,
the way Python's own last-resort handler shows warnings. The check is made for each batch,
not once, so that logging configured later takes over at once and no line is printed twice.

The last lines of stderr are kept (bounded) so that when the child ends on its own, the
error says what was run, how it ended and what it said: an import error, a syntax error or
a wrong interpreter otherwise shows up only as "peer closed the connection". Closing
follows the spec: close the child's stdin, wait, terminate, then kill.
"""

from __future__ import annotations

import collections
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ..errors import ConnectionClosedError, ServerExitedError
from ..protocol import jsonrpc
from ..protocol.deadline import Deadline
from ..protocol.jsonrpc import Message, RequestId
from .base import Received
from .stream import StreamTransport

stderr_logger = logging.getLogger("mcpsync.server_stderr")

#: At most this many of the child's last stderr lines go into a :class:`ServerExitedError`...
STDERR_TAIL_LINES = 20
#: ... and at most this many bytes of them (UTF-8); a longer single line keeps its end.
STDERR_TAIL_BYTES = 4096
#: One read of the child's stderr.
_STDERR_READ = 65536
#: A stderr "line" longer than this without a newline is passed on in pieces of this size.
_STDERR_MAX_LINE = 65536
#: After the child's stdout ends: how long to wait for it to exit and for its stderr to end,
#: so that the error can carry the exit status and the last lines.
_EXIT_WAIT = 2.0


def command_line(command: str | Sequence[str]) -> list[str]:
    """A stdio server's command as its argument list: a list (or tuple) of strings as it
    is, a string split as a POSIX shell splits it (``"python 'my server.py'"``), without
    a shell running it. The one reading of a command line for :meth:`Client.stdio
    <mcpsync.Client.stdio>`, :meth:`Server.proxy <mcpsync.Server.proxy>` and the
    ``mcpsync`` command, so a string any of them takes, all take. ``ValueError`` for one
    that cannot be split or is empty, ``TypeError`` for a list of anything but strings."""
    if isinstance(command, str):
        import shlex  # here: a server that never spawns one does not import it

        try:
            words = shlex.split(command)
        except ValueError as exc:
            raise ValueError(f"cannot split the command line {command!r}: {exc}") from None
        if not words:
            raise ValueError("the command line is empty")
        return words
    words = list(command)
    if not all(isinstance(word, (str, os.PathLike)) for word in words):
        raise TypeError(f"a command line is a string or a list of strings, not {command!r}")
    if not words:
        raise ValueError("the command line is empty")
    return [os.fspath(word) for word in words]


class SubprocessTransport:
    """Spawn ``command`` (a list of arguments, or a string split by :func:`command_line`)
    and talk to it over its stdin/stdout. Thread-safe ``close``."""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: IO[str] | None = None,
        inherit_env: bool = True,
        close_timeout: float = 2.0,
        max_message_bytes: int | None = None,
    ) -> None:
        command = command_line(command)
        child_env: dict[str, str] | None = None
        if env is not None or not inherit_env:
            child_env = dict(os.environ) if inherit_env else {}
            child_env.update(env or {})
        self.command = list(command)
        self.close_timeout = close_timeout
        self._stderr_sink = stderr
        self._label = server_label(self.command)
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._tail_lock = threading.Lock()
        self._exit_error: ServerExitedError | None = None
        self._exit_lock = threading.Lock()  # the reader and a writer may both see the end
        _check_executable(self.command[0], child_env, cwd)
        try:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_env,
                cwd=cwd,
                bufsize=0,
            )
        except OSError as exc:
            # e.g. ENOEXEC: a script without a "#!" line. Same type, but say what was run.
            raise type(exc)(f"cannot start the stdio server {self.command!r}: "
                            f"{exc.strerror or exc}") from exc
        assert self.process.stdin and self.process.stdout and self.process.stderr
        options: dict[str, Any] = {}
        if max_message_bytes is not None:
            options["max_message_bytes"] = max_message_bytes
        self._stream = StreamTransport(
            self.process.stdout.fileno(), self.process.stdin, peer="the stdio server",
            **options)
        self._out = self._stream.writer
        self._close_lock = threading.Lock()
        self._closed = False
        name = os.path.basename(self.command[0])
        self._stderr_thread = threading.Thread(
            target=self._drain_stderr, name=f"mcpsync-stderr-{name}", daemon=True
        )
        self._stderr_thread.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, message: Message, related_request_id: RequestId | None = None) -> None:
        """Write ``message`` to the child's stdin within ``write_timeout``."""
        try:
            self._stream.send(message)
        except ConnectionClosedError as exc:
            raise self._write_failed(exc) from None

    @property
    def orders_writes(self) -> bool:
        """:class:`~mcpsync.transports.base.OrderedWrites`: the stream's writer takes
        turns."""
        return True

    def send_call(self, message: Message, deadline: Deadline,
                  related_request_id: RequestId | None = None) -> None:
        """:class:`~mcpsync.transports.base.CallControl`: write ``message`` by the caller's
        ``deadline`` (see :meth:`StreamTransport.send_call`)."""
        try:
            # Straight to the writer: one frame less on every call.
            self._out.write(jsonrpc.encode(message) + b"\n", deadline, message)
        except ConnectionClosedError as exc:
            raise self._write_failed(exc) from None

    def abandon(self, request_id: RequestId) -> None:
        """:class:`~mcpsync.transports.base.CallControl`: nothing to end (one stream)."""

    def _write_failed(self, failure: ConnectionClosedError) -> ConnectionClosedError:
        """A broken pipe means the child is gone: say how it went, unless it stopped
        reading (it still runs: close() ends it) or we closed it first (the reader may have
        seen the child end first and the connection closed us: then the end it saw is
        still the reason, not "stream is closed")."""
        if self._stream.stalled is not None:
            return failure
        if self._closed and self._exit_error is None:
            return failure
        return self._exited("the stdio server")

    @property
    def write_timeout(self) -> float:
        """How long a write without a caller's deadline (a notification, an answer to the
        server's request) may take before the server is treated as gone; settable."""
        return self._stream.write_timeout

    @write_timeout.setter
    def write_timeout(self, seconds: float) -> None:
        self._stream.write_timeout = seconds

    def receive(self) -> Received | None:
        """The next message; ``None`` once closed by us. When the child's stdout ends
        without our asking, raises :class:`ServerExitedError` with its exit status and the
        tail of its stderr."""
        return self._ended_unasked(self._stream.receive())

    def receive_within(self, timeout: float) -> Received | None:
        """:meth:`receive`, waiting at most ``timeout`` seconds (``TimeoutError``)."""
        return self._ended_unasked(self._stream.receive_within(timeout))

    def _ended_unasked(self, item: Received | None) -> Received | None:
        if item is None and not self._closed:
            raise self._exited("the stdio server")
        return item

    @property
    def pollable(self) -> bool:
        return self._stream.pollable

    @property
    def buffered(self) -> bool:
        return self._stream.buffered

    @property
    def stderr_tail(self) -> str:
        """The last lines the child wrote to stderr (bounded, see ``STDERR_TAIL_*``)."""
        with self._tail_lock:
            lines = list(self._tail)
        return _bounded_tail(lines)

    def _exited(self, what: str) -> ServerExitedError:
        """The error for a child that ended: waits (bounded) for its exit and its stderr."""
        with self._exit_lock:
            if self._exit_error is None:
                self._exit_error = self._wait_for_exit(what)
        return self._exit_error.retitled(self._exit_error.reason)

    def _wait_for_exit(self, what: str) -> ServerExitedError:
        try:
            self.process.wait(_EXIT_WAIT)
        except subprocess.TimeoutExpired:
            pass
        returncode = self.process.poll()
        if returncode is not None:
            # Its stderr ends with it (unless a grandchild holds it open: bounded), and so
            # does its stdout: a write to a child that already exited fails before the
            # reader has seen what it printed (``echo hello``), which the error quotes.
            self._stderr_thread.join(_EXIT_WAIT)
            self._stream.read_to_end(_EXIT_WAIT)
        stray = self._stream.first_invalid
        return ServerExitedError(
            f"{what} {ServerExitedError.describe(returncode)}", command=self.command,
            returncode=returncode, stderr_tail=self.stderr_tail,
            stray_output=None if stray is None else stray.decode("utf-8", "replace"))

    def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        fd = stream.fileno()
        partial = b""
        while True:
            try:
                chunk = os.read(fd, _STDERR_READ)
            except OSError:
                break
            if not chunk:
                break
            *lines, partial = (partial + chunk).split(b"\n")
            while len(partial) > _STDERR_MAX_LINE:
                lines.append(partial[:_STDERR_MAX_LINE])
                partial = partial[_STDERR_MAX_LINE:]
            if lines:
                self._emit(lines)
        if partial:
            self._emit([partial])

    def _emit(self, raw_lines: list[bytes]) -> None:
        lines = [raw.decode("utf-8", "replace").rstrip("\r") for raw in raw_lines]
        with self._tail_lock:
            self._tail.extend(_clip(line) for line in lines[-STDERR_TAIL_LINES:])
        if self._stderr_sink is not None:
            try:
                self._stderr_sink.write("".join(line + "\n" for line in lines))
                self._stderr_sink.flush()
            except (OSError, ValueError):
                pass
        elif not stderr_logger.hasHandlers():
            _echo(self._label, lines)
        elif stderr_logger.isEnabledFor(logging.INFO):
            for line in lines:
                stderr_logger.info("[%s] %s", self.process.pid, line)

    def close(self) -> None:
        """Close stdin → wait → SIGTERM → wait → SIGKILL; reap the child; join the drainer."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        process = self.process
        assert process.stdin is not None
        # First: a write waiting for room in the pipe is woken and leaves the descriptor,
        # so that closing it can not pull it from under the write (or a reused number).
        self._stream.close()
        try:
            process.stdin.close()
        except OSError:
            pass
        for step in (None, process.terminate, process.kill):
            if step is not None:
                try:
                    step()
                except OSError:
                    pass
            try:
                process.wait(self.close_timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        self._stderr_thread.join(self.close_timeout)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass

    @property
    def returncode(self) -> int | None:
        return self.process.poll()


def _check_executable(program: str, env: Mapping[str, str] | None,
                      cwd: str | os.PathLike[str] | None) -> None:
    """Fail before spawning when ``program`` can not be run, saying why: Popen's own
    "[Errno 2] No such file or directory" does not say whether the program, the working
    directory or an interpreter named on a ``#!`` line is missing."""
    if cwd is not None and not os.path.isdir(cwd):
        # Checked first: Popen blames the program for a missing directory as well.
        kind = NotADirectoryError if os.path.exists(cwd) else FileNotFoundError
        why = "is not a directory" if kind is NotADirectoryError else "does not exist"
        raise kind(f"the stdio server's working directory {os.fspath(cwd)!r} {why}")
    if os.path.dirname(program):
        path = program if cwd is None else os.path.join(cwd, program)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"stdio server command not found: {program!r} "
                                    f"(no such file{'' if cwd is None else f' in {cwd}'})")
        if not os.access(path, os.X_OK):
            raise PermissionError(f"stdio server command is not executable: {program!r} "
                                  f"(run it with an interpreter, e.g. "
                                  f"[{sys.executable!r}, {program!r}])")
        return
    search = os.pathsep.join(os.get_exec_path(None if env is None else dict(env)))
    if shutil.which(program, path=search) is None:
        raise FileNotFoundError(f"stdio server command not found: {program!r} is not on "
                                f"PATH ({search or 'empty'})")


def server_label(command: Sequence[str]) -> str:
    """A short name for a server's lines: its script or module (``server.py``,
    ``-m weather``) after an interpreter, else its program (``uvx``); never the later
    arguments, which may hold a credential."""
    program = os.path.basename(str(command[0]))
    rest = [str(arg) for arg in command[1:3]]
    if rest[:1] == ["-m"] and len(rest) == 2:
        return f"{program} -m {rest[1]}"
    if rest and not rest[0].startswith("-"):
        return f"{program} {os.path.basename(rest[0])}"
    return program


def _echo(label: str, lines: list[str]) -> None:
    """Lines of a server's stderr onto this process's stderr, when nothing else shows them
    (in a notebook ``sys.stderr`` is the cell's output)."""
    stream = sys.stderr
    if stream is None:  # pythonw, a daemon with stderr closed: nowhere to show them
        return
    try:
        stream.write("".join(f"[{label}] {line}\n" for line in lines))
        stream.flush()
    except (OSError, ValueError, AttributeError):
        pass


def _clip(line: str) -> str:
    """One line cut to the tail's byte budget, keeping its end (where the error usually is)."""
    data = line.encode("utf-8")
    if len(data) <= STDERR_TAIL_BYTES:
        return line
    return "…" + data[-(STDERR_TAIL_BYTES - 4):].decode("utf-8", "ignore")


def _bounded_tail(lines: list[str]) -> str:
    """The last ``lines`` that fit in ``STDERR_TAIL_BYTES`` (newlines included)."""
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        cost = len(line.encode("utf-8")) + (1 if kept else 0)
        if size + cost > STDERR_TAIL_BYTES:
            break
        kept.append(line)
        size += cost
    return "\n".join(reversed(kept))
