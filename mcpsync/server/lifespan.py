"""A server's startup and shutdown: ``Server(lifespan=...)``, ``@server.on_startup`` and
``@server.on_shutdown``.

Startup runs once per *process*, because what it makes (a database pool, a model loaded
in memory, an HTTP session) belongs to one: under gunicorn each worker runs its own, and a
worker forked from a master that had already started (``--preload`` with an eager
``app.start()``) starts again instead of using the master's objects, which a fork does not
make safe to share. Nothing of the parent's is shut down in the child: the parent owns it.

It runs on the first thread that needs it (``run_stdio`` before reading stdin,
``connect``, the first HTTP request, ``app.start()``); threads that need it meanwhile wait
for it, bounded by ``startup_timeout``. A startup that raises is a
:class:`StartupError`, raised again to every later caller in this process (a server that
failed to start serves nothing) until :meth:`Lifespan.stop` resets it.

Shutdown runs once after a startup: explicitly (``run_stdio`` at EOF or a signal,
``McpWsgiApp.close()``, ``server.stop()``), or at interpreter exit (``atexit``), which is
how a gunicorn worker that exits gracefully runs it.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import logging
import os
import threading
import types
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Generic, Protocol, TypeVar

logger = logging.getLogger("mcpsync.server")


class Named(Protocol):
    """What a lifespan reads of its server itself (the public Server, which imports this
    module): its name, for the messages. The user's lifespan gets the server as it is."""

    @property
    def name(self) -> str: ...


#: The server a :class:`Lifespan` starts (``Self`` of the Server that makes it). Covariant:
#: the server is only handed to the user's lifespan, never taken from outside once made.
ServerT = TypeVar("ServerT", bound=Named, covariant=True)

#: ``Server(lifespan=...)``: called with the server, returns a context manager whose
#: ``__enter__`` value is the state (``ctx.state``); or a generator function that yields it.
LifespanFactory = Callable[[ServerT], AbstractContextManager[Any]]


class StartupError(RuntimeError):
    """The server's startup (its lifespan or an ``on_startup`` hook) raised, or did not
    finish within ``startup_timeout``. The original exception is ``__cause__``."""


class Lifespan(Generic[ServerT]):
    """The startup and shutdown of one Server in this process. Thread-safe; user code is
    never run while the lock is held."""

    def __init__(self, server: ServerT, factory: Callable[[ServerT], Any] | None,
                 startup_timeout: float) -> None:
        self._server = server
        self._factory: LifespanFactory[ServerT] | None = (
            contextlib.contextmanager(factory) if inspect.isgeneratorfunction(factory)
            else factory)
        self.startup_timeout = startup_timeout
        self.on_startup: list[Callable[[], Any]] = []
        self.on_shutdown: list[Callable[[], Any]] = []
        self._lock = threading.Lock()
        self._pid: int | None = None  # the process whose startup this is
        self._done: threading.Event | None = None  # set when that startup has finished
        self._stack: contextlib.ExitStack | None = None
        self._failure: StartupError | None = None
        self._state: Any = None
        self._atexit_pid: int | None = None
        self._starter: int | None = None  # the thread running startup now
        self._stopper: int | None = None  # the thread running shutdown now

    @property
    def has_hooks(self) -> bool:
        return self._factory is not None or bool(self.on_startup or self.on_shutdown)

    @property
    def started(self) -> bool:
        """Whether startup has run (and succeeded) in this process and not stopped since."""
        with self._lock:
            done = self._done
            return (self._pid == os.getpid() and done is not None and done.is_set()
                    and self._failure is None)

    def start(self) -> Any:
        """Run startup if this process has not; return the state. Raises StartupError."""
        pid = os.getpid()
        done = self._done
        if self._pid == pid and done is not None and done.is_set() and self._failure is None:
            # Started in this process: the check every WSGI request makes, without the lock
            # (startup sets each field before ``done``; a request racing stop() gets the
            # state it would have got a moment earlier).
            return self._state
        with self._lock:
            if self._pid != pid:
                # Never started here (or inherited through a fork: the parent's objects
                # are left alone, and ours are made anew).
                self._pid, self._done = pid, threading.Event()
                self._stack, self._failure, self._state = None, None, None
                self._starter = threading.get_ident()
                mine = True
            elif self._starter == threading.get_ident():
                # A startup hook reading ``server.state``: the state being built.
                return self._state
            else:
                mine = False
            done = self._done
            assert done is not None
            if mine and self.has_hooks and self._atexit_pid != pid:
                # Only with something to shut down: an entry keeps this server alive until
                # exit, and a test run makes thousands of servers. stop() removes it.
                self._atexit_pid = pid
                atexit.register(self._at_exit, pid)
        if mine:
            self._run_startup(done)
        elif not done.wait(self.startup_timeout):
            raise StartupError(f"server {self._server.name!r}: startup still running after "
                               f"{self.startup_timeout} s")
        with self._lock:
            if self._failure is not None:
                raise self._failure
            return self._state

    def _run_startup(self, done: threading.Event) -> None:
        stack = contextlib.ExitStack()
        state: Any = types.SimpleNamespace()
        failure: StartupError | None = None
        try:
            with self._lock:
                self._state = state
            if self._factory is not None:
                state = stack.enter_context(self._factory(self._server))
                with self._lock:
                    self._state = state
            for hook in list(self.on_startup):
                hook()
        except BaseException as exc:
            failure = StartupError(f"server {self._server.name!r} failed to start: "
                                   f"{type(exc).__name__}: {exc}")
            failure.__cause__ = exc
            # Raised, not logged: whoever started the server reports it, once (a parent
            # server that mounts this one wraps it in its own failure; the WSGI app, which
            # answers it, logs it). Logging it here too printed it once per server it
            # went through, and again where it was raised.
            logger.debug("%s", failure)
            try:
                stack.close()  # what did start is undone
            except Exception:
                logger.exception("server %r: error undoing a failed startup",
                                 self._server.name)
        with self._lock:
            self._stack, self._state, self._failure = (
                (None, None, failure) if failure is not None else (stack, state, None))
            self._starter = None
        done.set()

    @property
    def state(self) -> Any:
        """The lifespan's state, starting the server in this process if it has not."""
        return self.start()

    def stop(self) -> None:
        """Run the shutdown of this process's startup (once; a no-op if none ran here or it
        failed). ``on_shutdown`` hooks run last-registered first, then the lifespan's exit;
        one that raises is logged and the rest still run."""
        with self._lock:
            if (self._pid != os.getpid() or self._done is None or not self._done.is_set()
                    or self._stopper is not None):
                return
            stack, ran = self._stack, self._failure is None
            # The state stays readable (server.state, ctx.state) while the hooks run: a
            # hook reading it must not start the server again.
            self._stopper = threading.get_ident()
            registered, self._atexit_pid = self._atexit_pid == os.getpid(), None
        try:
            if registered:
                atexit.unregister(self._at_exit)
            if ran:
                self._run_shutdown(stack)
        finally:
            with self._lock:
                self._pid, self._done, self._stack, self._failure, self._state = (
                    None, None, None, None, None)
                self._stopper = None

    def _run_shutdown(self, stack: contextlib.ExitStack | None) -> None:
        for hook in reversed(list(self.on_shutdown)):
            try:
                hook()
            except Exception:
                logger.exception("server %r: an on_shutdown hook raised", self._server.name)
        if stack is not None:
            try:
                stack.close()
            except Exception:
                logger.exception("server %r: the lifespan's exit raised", self._server.name)

    def _at_exit(self, pid: int) -> None:
        if os.getpid() == pid:  # a forked child inherits the registration: not its to run
            self.stop()
