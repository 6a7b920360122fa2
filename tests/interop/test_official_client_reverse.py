"""The official SDK client (legacy mode) with elicitation, sampling and roots callbacks
against a mcpsync stdio server whose tools are plain blocking functions."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.interop.peers import run_official_client
from tests.spec import validate, validate_message

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, str(Path(__file__).with_name("servers") / "asking_server.py")]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def drive(*args):
    return run_official_client(list(args), SERVER, env=ENV)


def check_wire(report):
    """Every message the mcpsync server sent validates against the 2025-11-25 schema."""
    sent = [e["msg"] for e in report["wire"] if e["dir"] == "send"]
    received = [e["msg"] for e in report["wire"] if e["dir"] != "send"]
    methods = {m["id"]: m["method"] for m in sent if "method" in m and "id" in m}
    assert received
    for message in received:
        validate_message("2025-11-25", message, methods.get(message.get("id")))


def test_elicitation(official_python):
    report = drive("--elicit-json", '{"name": "Grace"}', "call", "ask_contact", "{}")
    assert report["result"]["content"][0]["text"] == "Grace (30)"
    check_wire(report)


def test_declined_elicitation(official_python):
    report = drive("--elicit-json", "decline", "call", "ask_contact", "{}")
    assert report["result"]["content"][0]["text"] == "user said decline"


def test_sampling(official_python):
    report = drive("--sampling-text", "a fine summary", "call", "summarize",
                   '{"text": "long"}')
    text = report["result"]["content"][0]["text"]
    assert text.endswith("a fine summary"), text


def test_roots(official_python):
    report = drive("--roots", "file:///tmp/a,file:///tmp/b", "call", "roots", "{}")
    assert report["result"]["content"][0]["text"] == "file:///tmp/a,file:///tmp/b"


def test_progress(official_python):
    report = drive("progress", "count", '{"steps": 4}')
    assert [p["progress"] for p in report["progress"]] == [1, 2, 3, 4]


def test_template_resource_and_prompt(official_python):
    report = drive("read", "test://template/7/data")
    assert '"id": "7"' in str(report)
    report = drive("get-prompt", "greet", '{"name": "Ada"}')
    assert "Please greet Ada." in str(report)


@pytest.mark.parametrize("mode", ["modern", "auto"])
def test_the_same_tools_serve_2026_07_28_through_mrtr(official_python, mode):
    """The official client in 2026-07-28 mode gets elicitation, sampling and roots through
    InputRequiredResult rounds — from the same blocking tool code as above."""
    elicited = drive("--mode", mode, "--elicit-json", '{"name": "Grace"}', "call",
                     "ask_contact", "{}")
    assert elicited["protocolVersion"] == "2026-07-28"
    assert elicited["rawResult"]["content"][0]["text"] == "Grace (30)"
    rounds = [e["msg"]["result"] for e in elicited["wire"]
              if e["dir"] != "send" and "result" in e["msg"]]
    assert any(r.get("resultType") == "input_required" for r in rounds)
    for result in rounds:
        kind = "InputRequiredResult" if result.get("resultType") == "input_required" else "Result"
        validate("2026-07-28", kind, result)
    sampled = drive("--mode", mode, "--sampling-text", "fine", "call", "summarize",
                    '{"text": "x"}')
    assert sampled["rawResult"]["content"][0]["text"].endswith("fine")
    rooted = drive("--mode", mode, "--roots", "file:///a,file:///b", "call", "roots", "{}")
    assert rooted["rawResult"]["content"][0]["text"] == "file:///a,file:///b"
