"""The client leg's rerun of a scenario that missed under load: a warning counts (the
suite's baseline check fails on one), and the single run's summary is read from stderr
(where the suite prints it). The suite's process is replaced by canned output here: what
is tested is how ``run_client_leg`` reads it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import suite

SUMMARY = ("=== SUMMARY ===\n✓ initialize: 1 passed, 0 failed\n"
           "✗ sse-retry: 2 passed, 0 failed, 1 warnings\n")


def test_a_warning_is_rerun_and_the_clean_rerun_counts(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path):
    calls: list[list[str]] = []

    def fake(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        if "--scenario" in args:
            return subprocess.CompletedProcess(args, 0, "Results saved\n",
                                               "Passed: 3/3, 0 failed, 0 warnings\n")
        return subprocess.CompletedProcess(args, 1, SUMMARY, "")

    monkeypatch.setattr(suite, "_suite", fake)
    leg = suite.run_client_leg("2025-11-25", tmp_path)
    assert [a[a.index("--scenario") + 1] for a in calls if "--scenario" in a] == ["sse-retry"]
    assert leg.exit_code == 0
    assert all(s.clean for s in leg.scenarios)


def test_a_rerun_that_warns_again_still_fails(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path):
    def fake(args: list[str], timeout: float) -> Any:
        if "--scenario" in args:
            return subprocess.CompletedProcess(args, 0, "",
                                               "Passed: 2/3, 0 failed, 1 warnings\n")
        return subprocess.CompletedProcess(args, 1, SUMMARY, "")

    monkeypatch.setattr(suite, "_suite", fake)
    assert suite.run_client_leg("2025-11-25", tmp_path).exit_code == 1
