"""Fuzz a real ``run_stdio`` server subprocess, both eras: after every case the server
still answers, and everything it wrote is valid JSON-RPC with no traceback or path.

One test per mutation family (``strategies.py``), so that a regression names its family
(general mutations, lone surrogates, deep nesting, bad params).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .settings import fuzz_settings
from .stdio_target import StdioTarget
from .strategies import BAD_PARAMS, GENERAL, HANDSHAKE, MODERN, NESTING, SURROGATES, Case, cases

ERAS = [MODERN, HANDSHAKE]


@pytest.fixture(scope="module")
def modern() -> Iterator[StdioTarget]:
    server = StdioTarget(MODERN)
    yield server
    server.close()


@pytest.fixture(scope="module")
def handshake() -> Iterator[StdioTarget]:
    server = StdioTarget(HANDSHAKE)
    yield server
    server.close()


def _pick(era: str, modern: StdioTarget, handshake: StdioTarget) -> StdioTarget:
    return modern if era == MODERN else handshake


@fuzz_settings(120)
@given(case=cases(MODERN, GENERAL))
def test_general_modern(modern: StdioTarget, case: Case) -> None:
    modern.run(case)


@fuzz_settings(120)
@given(case=cases(HANDSHAKE, GENERAL))
def test_general_handshake(handshake: StdioTarget, case: Case) -> None:
    handshake.run(case)


@pytest.mark.parametrize("era", ERAS)
@fuzz_settings(25)
@given(data=st.data())
def test_lone_surrogates(modern: StdioTarget, handshake: StdioTarget, era: str,
                         data: st.DataObject) -> None:
    _pick(era, modern, handshake).run(data.draw(cases(era, SURROGATES), label="case"))


@pytest.mark.parametrize("era", ERAS)
@fuzz_settings(10)
@given(data=st.data())
def test_deep_nesting(modern: StdioTarget, handshake: StdioTarget, era: str,
                      data: st.DataObject) -> None:
    _pick(era, modern, handshake).run(data.draw(cases(era, NESTING), label="case"))


@pytest.mark.parametrize("era", ERAS)
@fuzz_settings(30)
@given(data=st.data())
def test_bad_params(modern: StdioTarget, handshake: StdioTarget, era: str,
                    data: st.DataObject) -> None:
    _pick(era, modern, handshake).run(data.draw(cases(era, BAD_PARAMS), label="case"))
