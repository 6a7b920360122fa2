"""The official conformance suite as tests: every required scenario of both revisions.

Server legs: every scenario the revision requires must pass (the suite exits non-zero
otherwise); the unscored ones the issue names must pass too. Client legs: everything but
the ``auth/*`` scenarios in ``expected-failures.yml`` passes, and the suite itself fails the
run if a listed scenario starts passing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.suite import REVISIONS, Leg, run_client_leg, run_server_leg

#: Unscored scenarios that must pass all the same.
MUST_PASS_UNSCORED = {"json-schema-2020-12", "server-sse-polling", "server-session-lifecycle",
                      "http-header-validation", "http-custom-header-server-validation"}


def _explain(leg: Leg) -> str:
    summary = leg.output.split("SUMMARY", 1)[-1]
    tail = "\n".join(summary.splitlines()[:80])
    return f"{leg.side} {leg.revision}: exit {leg.exit_code}, failing {leg.failing}\n{tail}"


@pytest.mark.parametrize("revision", REVISIONS)
def test_server_conformance(revision: str, tmp_path: Path) -> None:
    leg = run_server_leg(revision, tmp_path)
    assert leg.scenarios, _explain(leg)
    assert leg.exit_code == 0, _explain(leg)
    assert not leg.failing, _explain(leg)
    names = {s.name for s in leg.scenarios}
    for unscored in MUST_PASS_UNSCORED & names:
        assert unscored not in leg.failing, _explain(leg)


@pytest.mark.parametrize("revision", REVISIONS)
def test_client_conformance(revision: str, tmp_path: Path) -> None:
    leg = run_client_leg(revision, tmp_path)
    assert leg.scenarios, _explain(leg)
    assert leg.exit_code == 0, _explain(leg)
    assert all(name.startswith("auth/") for name in leg.failing), _explain(leg)
