"""The official SDK client (mcp 2.3.0, in its own process) through a plain front that
sends the client's answers to another worker than the one that asked (issue #17)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.http.relay_cluster import Cluster, Front, front_by_kind
from tests.interop.peers import run_official_client

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def test_official_client_elicitation_answered_through_the_other_worker(official_python):
    with Cluster() as cluster:
        front = Front(cluster.urls, front_by_kind(answer=1, notification=1))
        try:
            report = run_official_client(
                ["--elicit-json", json.dumps({"name": "Ada"}), "call", "ask", "{}"],
                url=front.url, env=ENV)
        finally:
            front.close()
    assert report["result"]["content"][0]["text"] == "accept:Ada@0"
    assert ("answer", 1) in front.sent and ("request", 0) in front.sent
