"""docs/observability.md's Flask and Django examples, served for real: each runs in a
process of its own (``framework_trace.py``: the WSGI middleware records into the global
tracer provider, and Django's settings are process-wide), on a real socket, called by a
``Client`` in both eras; the trace it checks is the one the page describes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import require_module

require_module("opentelemetry.instrumentation.wsgi")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("framework", ["flask", "django"])
def test_the_docs_framework_example_traces_http_to_tool_to_question(framework, version):
    require_module(framework)
    done = subprocess.run(
        [sys.executable, "-m", "tests.telemetry.framework_trace", framework, version],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "ok"
