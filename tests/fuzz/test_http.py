"""Fuzz the WSGI app on a real socket: 2026-07-28 and 2025-03-26 at ``/mcp``, and the
2024-11-05 ``/messages`` endpoint. After every case the app still answers, no status is
500, no body is HTML, and every answer is valid JSON-RPC with no traceback or path.

One test per mutation family (``strategies.py``), so that a regression names its family
(general mutations, lone surrogates, deep nesting, bad params).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .http_target import OLD_SSE, HttpTarget
from .settings import fuzz_settings
from .strategies import BAD_PARAMS, GENERAL, HANDSHAKE, MODERN, NESTING, SURROGATES, cases

ENDPOINTS = [MODERN, HANDSHAKE, OLD_SSE]


@pytest.fixture(scope="module")
def targets() -> Iterator[dict[str, HttpTarget]]:
    started: dict[str, HttpTarget] = {}
    try:
        for era in ENDPOINTS:
            started[era] = HttpTarget(era)
        yield started
    finally:
        for target in started.values():
            target.close()


def _strategy_era(era: str) -> str:
    """The template set of an endpoint (2024-11-05 speaks the handshake era's messages)."""
    return MODERN if era == MODERN else HANDSHAKE


@pytest.mark.parametrize("era", ENDPOINTS)
@fuzz_settings(80)
@given(data=st.data())
def test_general(targets: dict[str, HttpTarget], era: str, data: st.DataObject) -> None:
    targets[era].run(data.draw(cases(_strategy_era(era), GENERAL), label="case"))


@pytest.mark.parametrize("era", ENDPOINTS)
@fuzz_settings(25)
@given(data=st.data())
def test_lone_surrogates(targets: dict[str, HttpTarget], era: str,
                         data: st.DataObject) -> None:
    targets[era].run(data.draw(cases(_strategy_era(era), SURROGATES), label="case"))


@pytest.mark.parametrize("era", ENDPOINTS)
@fuzz_settings(10)
@given(data=st.data())
def test_deep_nesting(targets: dict[str, HttpTarget], era: str, data: st.DataObject) -> None:
    targets[era].run(data.draw(cases(_strategy_era(era), NESTING), label="case"))


@pytest.mark.parametrize("era", ENDPOINTS)
@fuzz_settings(30)
@given(data=st.data())
def test_bad_params(targets: dict[str, HttpTarget], era: str, data: st.DataObject) -> None:
    targets[era].run(data.draw(cases(_strategy_era(era), BAD_PARAMS), label="case"))
