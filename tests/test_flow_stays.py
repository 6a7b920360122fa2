"""One HTTP request reads top to bottom (docs/architecture.md, section 2a): measured.

``benchmarks/flow_stays.py`` calls the WSGI app in process with a ``tools/call`` of
``echo``, once warm, and follows every call and return on every thread. Counted within
``mcpsync/http/`` (a call into ``dispatch/`` or ``server/`` and back is part of the stay
that made it), a *stay* is a run of events in one module and a *return* a stay in a module
the request had already left. The request's path at that level is intake, then the era's
handler, then the reply: the bounds below are half the returns of the code that called
``intake.py`` and ``replies.py`` back and forth for each check (2026-07-28: 39 stays, 33
returns; a 2025-11-25 session's POST: 77 stays, 65 returns), and the intake is entered
once. A change that makes the path bounce between the thin modules again fails here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"

#: Era -> the most returns within ``http/`` (half of those before the path was made one).
MOST_RETURNS = {"modern": 16, "session": 32}


def _flow_stays() -> ModuleType:
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # it imports wsgi_inproc beside it
    spec = importlib.util.spec_from_file_location("flow_stays", BENCHMARKS / "flow_stays.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("era", ["modern", "session"])
def test_one_request_passes_through_the_http_layer_once(era: str) -> None:
    flow = _flow_stays()
    seq = flow.measure(era, "http")
    _, stays, returns = flow.count(seq)
    path = " → ".join(seq)
    assert returns <= MOST_RETURNS[era], f"{era}: {stays} stays, {returns} returns: {path}"
    # Everything read and checked before dispatch is one call of the intake.
    assert seq.count("http/intake.py") == 1, path
    # The request enters the app, the intake, then the era's handler, in that order.
    assert seq[:4] == ["http/wsgi.py", "http/intake.py", "http/wsgi.py",
                       "http/modern.py" if era == "modern" else "http/legacy.py"], path


def test_within_counts_only_the_package_s_modules() -> None:
    # The measure itself: another package's modules are part of the stay that called them.
    flow = _flow_stays()
    events = ["http/wsgi.py", "protocol/budget.py", "http/wsgi.py", "http/intake.py",
              "protocol/decoding.py", "http/intake.py", "http/wsgi.py"]
    assert flow.stays(events) == events
    assert flow.stays(events, "http") == ["http/wsgi.py", "http/intake.py", "http/wsgi.py"]
    assert flow.count(flow.stays(events)) == (4, 7, 3)
    assert flow.count(flow.stays(events, "http")) == (2, 3, 1)
