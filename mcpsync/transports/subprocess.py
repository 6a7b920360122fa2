"""The client side of stdio: a server running as a child process.

The child's stdout is the protocol stream; its stderr is drained line by line on a thread
into the ``mcpsync.server_stderr`` logger (or a file you pass), so a chatty server can never
block on a full stderr pipe — and nothing needs ``sys.stderr.fileno()``, which Jupyter does
not have. Closing follows the spec: close the child's stdin, wait, terminate, then kill.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ..protocol.jsonrpc import Message, RequestId
from .base import Received
from .stream import StreamTransport

stderr_logger = logging.getLogger("mcpsync.server_stderr")


class SubprocessTransport:
    """Spawn ``command`` and talk to it over its stdin/stdout. Thread-safe ``close``."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: IO[str] | None = None,
        inherit_env: bool = True,
        close_timeout: float = 2.0,
        max_message_bytes: int | None = None,
    ) -> None:
        if isinstance(command, str):
            raise TypeError("command must be a list of arguments, not a string")
        child_env: dict[str, str] | None = None
        if env is not None or not inherit_env:
            child_env = dict(os.environ) if inherit_env else {}
            child_env.update(env or {})
        self.command = list(command)
        self.close_timeout = close_timeout
        self._stderr_sink = stderr
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            cwd=cwd,
            bufsize=0,
        )
        assert self.process.stdin and self.process.stdout and self.process.stderr
        options: dict[str, Any] = {}
        if max_message_bytes is not None:
            options["max_message_bytes"] = max_message_bytes
        self._stream = StreamTransport(
            self.process.stdout.fileno(), self.process.stdin, **options
        )
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
        self._stream.send(message, related_request_id)

    def receive(self) -> Received | None:
        return self._stream.receive()

    def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if self._stderr_sink is not None:
                try:
                    self._stderr_sink.write(line + "\n")
                    self._stderr_sink.flush()
                except (OSError, ValueError):
                    pass
            else:
                stderr_logger.info("[%s] %s", self.process.pid, line)

    def close(self) -> None:
        """Close stdin → wait → SIGTERM → wait → SIGKILL; reap the child; join the drainer."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        process = self.process
        assert process.stdin is not None
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
        self._stream.close()
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
