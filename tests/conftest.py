"""Run-wide checks: whether the spec's JSON Schemas are there (see ``tests/spec.py``).

Without them the schema assertions are skipped and the run says so exactly once: in the
report header, or (``-q`` hides the header) in the closing summary.
"""

from __future__ import annotations

import pytest

from tests import spec


def pytest_configure(config: pytest.Config) -> None:
    if not spec.available() and spec.required():
        raise pytest.UsageError(
            f"the MCP spec schemas are required ({spec.REQUIRE_ENV}=1 or {spec.SPEC_ENV} set) "
            f"but {spec.SPEC_DIR} does not exist")


def pytest_report_header(config: pytest.Config) -> str | None:
    return None if spec.available() else spec.unavailable_notice()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not spec.available() and terminalreporter.verbosity < 0:
        terminalreporter.write_line(spec.unavailable_notice())
