"""Harnesses the tests share: many threads doing the same thing at once, a bounded wait
for state that has no event to wait on, and a probe of the stack left to code the garbage
collector runs in the middle of other work.

``run_threads`` replaces the hand-written "start N threads, collect results and errors,
join" loops: those joined without checking that the threads had ended (where a test only
asserted an empty error list, a hung thread passed) and showed an error list instead of
the thread's traceback. ``wait_until`` replaces the local poll loops, each with its own
deadline arithmetic and its own way of failing.

Two run-wide policies live here too, so every test obeys the same ones:

- ``require_module`` / ``missing``: a test dependency that is not installed skips the test
  locally and FAILS it under ``MCPSYNC_REQUIRE_PEERS=1`` (CI), naming the pip package. Use
  them instead of ``pytest.importorskip`` (which always skips: a CI image missing a
  package would quietly drop whole areas).
- ``WAIT`` / ``LONG_WAIT`` / ``slack``: the one bound for timed waits, scaled by
  ``MCPSYNC_TEST_SLACK`` (default 1; 3 on a very slow machine). A wait on something that
  should happen is never a measure of speed: the bound is only how long a broken run takes
  to fail.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import NoReturn, TypeVar

T = TypeVar("T")

REQUIRE_ENV = "MCPSYNC_REQUIRE_PEERS"
SLACK_ENV = "MCPSYNC_TEST_SLACK"


def _slack() -> float:
    text = os.environ.get(SLACK_ENV, "").strip()
    try:
        value = float(text) if text else 1.0
    except ValueError:
        raise ValueError(f"{SLACK_ENV}={text!r} is not a number") from None
    if value <= 0:
        raise ValueError(f"{SLACK_ENV}={text!r} must be above 0")
    return value


SLACK = _slack()


def slack(seconds: float) -> float:
    """``seconds`` scaled by ``MCPSYNC_TEST_SLACK``: for a bound that is not ``WAIT`` or
    ``LONG_WAIT`` (a server's own timeout a test sets and then waits out, say)."""
    return seconds * SLACK


# The bound on a wait for something that should happen promptly: in this process, or in
# one child process. Generous: the machine running the tests may be loaded.
WAIT = slack(30.0)
# The bound on a wait that starts several processes (gunicorn workers behind nginx,
# Celery workers, a peer SDK under node) on a loaded two-core machine.
LONG_WAIT = slack(120.0)


def peers_required() -> bool:
    """Whether a missing dependency fails the test (CI) instead of skipping it."""
    return os.environ.get(REQUIRE_ENV) == "1"


def missing(message: str) -> NoReturn:
    """Skip the test (or the module, at module level) because something it needs is not
    installed; under ``MCPSYNC_REQUIRE_PEERS=1`` fail instead, with ``message``."""
    import pytest  # here, not at the top: server subprocesses import this module for WAIT
    if peers_required():
        pytest.fail(f"{message}; {REQUIRE_ENV}=1 forbids skipping", pytrace=False)
    pytest.skip(message, allow_module_level=True)


# Import name -> pip package, where they differ.
_PACKAGES = {
    "jwt": "PyJWT",
    "opentelemetry.sdk": "opentelemetry-sdk",
    "opentelemetry.instrumentation.wsgi": "opentelemetry-instrumentation-wsgi",
    "opentelemetry": "opentelemetry-api",
    "annotated_types": "annotated-types (comes with pydantic)",
}


def require_module(name: str, *, package: str | None = None) -> ModuleType:
    """Import and return the module ``name``; when it is not installed, skip (or, under
    ``MCPSYNC_REQUIRE_PEERS=1``, fail) naming the pip ``package`` to install.

    Only the module itself (or a parent package) being absent counts as "not installed":
    an ImportError raised from inside an installed module is a real error and propagates.
    Works in a test, a fixture or at a module's top level."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        absent = exc.name or ""
        if not (name == absent or name.startswith(absent + ".")):
            raise
    if package is None:
        package = next((pkg for prefix, pkg in _PACKAGES.items()
                        if name == prefix or name.startswith(prefix + ".")),
                       name.split(".")[0])
    missing(f"{package} is not installed (no module {name!r}): pip install -e '.[test]'")


def run_threads(fn: Callable[[int], T], n: int, *, name: str = "t-worker",
                timeout: float = WAIT) -> list[T]:
    """Run ``fn(i)`` for ``i`` in ``range(n)``, each on its own thread, all at once; return
    the results in order of ``i``.

    The threads are named ``f"{name}-{i}"`` and released together by a barrier, so the
    calls really overlap (starting a thread costs more than many calls take). Each thread
    gets ``timeout`` seconds to finish counted from the release; the first exception any
    thread raised is re-raised here, naming its thread, and a thread still running after
    the bound fails the test rather than leaving it to hang. The exception is the
    thread's own (so ``pytest.raises`` around this sees its type), with a note naming the
    thread; on Python 3.10 it is wrapped in an AssertionError that says which.
    """
    start = threading.Barrier(n, timeout=timeout)
    results: dict[int, T] = {}
    errors: list[tuple[str, BaseException]] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        try:
            start.wait()
            value = fn(i)
        except BaseException as exc:  # reported to the test below, with its thread
            with lock:
                errors.append((threading.current_thread().name, exc))
            return
        with lock:
            results[i] = value

    threads = [threading.Thread(target=run, args=(i,), name=f"{name}-{i}", daemon=True)
               for i in range(n)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0.0))
    stuck = [thread.name for thread in threads if thread.is_alive()]
    with lock:
        first = errors[0] if errors else None
    if first is not None:
        thread_name, exc = first
        note = f"raised on thread {thread_name}"
        if stuck:
            note += f"; {len(stuck)} of {n} threads did not finish within {timeout} s"
        if hasattr(exc, "add_note"):  # Python 3.11+: the original exception, annotated
            exc.add_note(note)
            raise exc
        raise AssertionError(f"{note}: {exc!r}") from exc
    if stuck:
        raise AssertionError(f"{len(stuck)} of {n} threads did not finish within {timeout} s: "
                             f"{', '.join(stuck)}")
    return [results[i] for i in range(n)]


def wait_until(predicate: Callable[[], object], *, timeout: float, interval: float = 0.01,
               message: str | Callable[[], object] = "the condition never held") -> None:
    """Return once ``predicate()`` is true; fail with ``message`` after ``timeout`` seconds.

    This is the one sanctioned poll in the tests (the rule is: wait on events, bounded).
    Prefer an ``Event`` or ``Condition`` wherever the code under test offers one; this is
    for state nothing signals: a counter another thread lowers, a file another process
    writes, a socket the server closes in its own time. The poll is bounded by ``timeout``
    and backs off ``interval`` seconds between checks (on an Event nobody sets, so the
    pause is a wait, not a ``time.sleep``). The predicate is checked once more at the
    deadline, so a slow last step is not failed by the clock. ``message`` may be a
    callable, evaluated only on failure (e.g. to show the value that never settled).
    """
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not predicate():
        left = deadline - time.monotonic()
        if left <= 0:
            if predicate():
                return
            text = message() if callable(message) else message
            raise AssertionError(f"after {timeout} s: {text}")
        pause.wait(min(interval, left))


@contextlib.contextmanager
def stack_probe(depth: int = 300) -> Iterator[list[bool]]:
    """Collect garbage at every allocation while the block runs, and record for each
    collection whether the code it runs (finalizers, gc callbacks) still has ``depth``
    frames of stack; yields the list of records.

    The collector runs in whichever thread allocates, wherever that thread is: inside a
    recursive C parser that descended a thousand levels, a finalizer fails with
    RecursionError. Process-wide while it lasts (gc thresholds are), so keep it short."""
    records: list[bool] = []

    def probe(phase: str, info: dict[str, int]) -> None:
        def down(n: int) -> int:
            return down(n - 1) if n else 0

        try:
            down(depth)
            records.append(True)
        except RecursionError:
            records.append(False)

    old = gc.get_threshold()
    gc.callbacks.append(probe)
    gc.set_threshold(1)
    try:
        yield records
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(probe)
