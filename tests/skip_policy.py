"""The skip policy's run-wide half, a pytest plugin (``tests/conftest.py`` loads it).

Under ``MCPSYNC_REQUIRE_PEERS=1`` (CI) a run that reports a skip not listed in
``tests/expected_skips.txt`` fails at its end, and the summary names each such skip with
its reason. A missing dependency already fails its own test there
(``tests.helpers.require_module``); this catches every other way a test can go quiet: a
stale guard, a parametrized id that can never run, a ``skipif`` that became always true.
Locally nothing changes: a skip is a skip.

With pytest-xdist the controller does the check: it receives every worker's reports.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import spec
from tests.helpers import REQUIRE_ENV, peers_required

EXPECTED_SKIPS = Path(__file__).with_name("expected_skips.txt")
_skipped: list[tuple[str, str]] = []  # (node id, reason), in the process that reports
_unexpected: list[tuple[str, str]] = []


def expected_skip_patterns(path: Path = EXPECTED_SKIPS) -> list[str]:
    """The node id patterns of ``expected_skips.txt`` (``*`` matches anything; nothing else
    is special, so ``[id]`` is literal): a line's first word;
    ``#`` starts a comment (every entry says why its skip is expected)."""
    patterns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            patterns.append(words[0])
    return patterns


def unexpected_skips(skipped: list[tuple[str, str]], patterns: list[str]) -> list[tuple[str, str]]:
    """The skips in ``skipped`` (node id, reason) that no pattern matches."""
    compiled = [re.compile(".*".join(re.escape(part) for part in pattern.split("*")))
                for pattern in patterns]
    return [(nodeid, reason) for nodeid, reason in skipped
            if not any(regex.fullmatch(nodeid) for regex in compiled)]


def governed_here(skipped: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The skips this policy rules on: not those for want of the spec's JSON Schemas, which
    have a policy of their own (``MCPSYNC_REQUIRE_SPEC``: without it a run with no
    spec folder beside the checkout, a bare clone's, skips those assertions with one notice, by
    design; with it the run stops at its start)."""
    notice = spec.unavailable_notice()
    return [(nodeid, reason) for nodeid, reason in skipped if reason != notice]


def _skip_reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append((report.nodeid, _skip_reason(report)))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:  # a whole module (or class) skipped while it was collected
        _skipped.append((report.nodeid, _skip_reason(report)))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Only where the run ends: with pytest-xdist, the controller (it receives every
    # worker's reports), not each worker.
    if not peers_required() or hasattr(session.config, "workerinput"):
        return
    _unexpected[:] = unexpected_skips(governed_here(_skipped), expected_skip_patterns())
    if _unexpected and session.exitstatus in (pytest.ExitCode.OK,
                                              pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _unexpected:
        return
    terminalreporter.section("unexpected skips", sep="=", red=True, bold=True)
    terminalreporter.write_line(
        f"{REQUIRE_ENV}=1: {len(_unexpected)} skip(s) not listed in "
        f"tests/{EXPECTED_SKIPS.name} fail the run:")
    for nodeid, reason in _unexpected:
        terminalreporter.write_line(f"  {nodeid}: {reason}")
