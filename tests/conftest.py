"""Run-wide checks: whether the spec's JSON Schemas are there (see ``tests/spec.py``).

Without them the schema assertions are skipped and the run says so exactly once: in the
report header, or (``-q`` hides the header) in the closing summary.

Also the run-wide Redis (``redis_server``: one ``redis-server`` for the whole run, started
on first use and stopped by PID at the end; tests keep apart by key prefix, see
``tests/services.py``).

And the skip policy's run-wide half (``tests/skip_policy.py``): under
``MCPSYNC_REQUIRE_PEERS=1`` (CI) a skip not listed in ``tests/expected_skips.txt`` fails
the run at its end, each one named (a missing dependency already fails its own test:
``tests.helpers.require_module``). Other skips would quietly drop whole areas from CI.

And one guard for every test: it leaves ``os.environ`` as it found it. A variable left
behind reaches every subprocess a later test starts (a ``DJANGO_SETTINGS_MODULE`` left
by a Django test once made each ``celery worker`` fail to start); use ``monkeypatch``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import spec
from tests.services import RedisServer, require_redis_library, unique_prefix

pytest_plugins = ["tests.skip_policy"]

_ENVIRON_BEFORE = pytest.StashKey[dict[str, str]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item.stash[_ENVIRON_BEFORE] = dict(os.environ)  # before any fixture, module ones included
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    result = yield
    before = item.stash.get(_ENVIRON_BEFORE, None)
    if before is not None:
        changed = sorted(key for key in before.keys() | os.environ.keys()
                         if before.get(key) != os.environ.get(key)
                         and key != "PYTEST_CURRENT_TEST")
        for key in changed:
            if key in before:
                os.environ[key] = before[key]
            else:
                del os.environ[key]
        if changed:
            raise AssertionError(f"the test left os.environ changed: {', '.join(changed)}")
    return result


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One real ``redis-server`` for the run (skipped, or failed in CI, when missing)."""
    require_redis_library()
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture
def redis_prefix(request: pytest.FixtureRequest) -> str:
    """A key prefix of this test's own (nothing is flushed between tests)."""
    return unique_prefix(request.node.name[:40])


# The directories whose tests start a whole topology: marked ``slow`` (``-m "not slow"``).
SLOW_DIRS = ("deploy", "on_celery", "interop")
_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = [_TESTS / name for name in SLOW_DIRS]
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in slow):
            item.add_marker(pytest.mark.slow)


#: pytest-xdist workers per core for ``-n auto`` (the README's command). The suite mostly
#: waits (on child processes, sockets, Redis, a browser): at one worker per core a run on
#: the two-core CI machine kept the CPUs half idle (user+sys 10 min in 10.7 min of two
#: cores); at two per core it took 8 min with the same tests passing. Bounds are WAIT
#: (scaled by MCPSYNC_TEST_SLACK), never a margin the extra load could eat.
WORKERS_PER_CORE = 2


@pytest.hookimpl(optionalhook=True)  # a run without pytest-xdist does not know the hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


def pytest_configure(config: pytest.Config) -> None:
    # A run started in the background by a non-interactive shell (``cmd &``, nohup) has
    # SIGINT ignored, and so would every server and client the tests spawn: Python then
    # installs no KeyboardInterrupt handler and the Ctrl-C tests cannot work. Put Python's
    # own handler back (children then start with SIGINT at its default, as from a terminal).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if not spec.available() and spec.required():
        raise pytest.UsageError(
            f"the MCP spec schemas are required ({spec.REQUIRE_ENV}=1 or {spec.SPEC_ENV} set) "
            f"but {spec.SPEC_DIR} does not exist")


def pytest_report_header(config: pytest.Config) -> str | None:
    return None if spec.available() else spec.unavailable_notice()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not spec.available() and terminalreporter.verbosity < 0:
        terminalreporter.write_line(spec.unavailable_notice())
