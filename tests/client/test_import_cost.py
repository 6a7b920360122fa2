"""Cold start: neither ``import mcpsync`` nor a server's first answer imports jsonschema.

jsonschema imports its format checkers' optional dependencies eagerly; in a Jupyter
environment (``jsonschema[format-nongpl]``) that is over a second, so the schemas mcpsync
generates are checked by the compiled fast path (mcpsync.dispatch.fastcheck) and jsonschema
is imported only to word the error of a refused call, or for a hand-written schema.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from mcpsync import Client
from tests.serving import free_port, serving_process

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVER = pathlib.Path(__file__).with_name("coldstart_server.py")
ERAS = ["2026-07-28", "2025-11-25"]

PROBE = """
import dataclasses, enum, sys
from typing import Literal
import mcpsync
assert "jsonschema" not in sys.modules, "import mcpsync pulled in jsonschema"
server = mcpsync.Server("s")

class Unit(enum.Enum):
    C = "c"
    F = "f"

@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0

@dataclasses.dataclass
class Summary:
    count: int
    unit: Unit

@server.tool()
def add(a: int, b: int) -> int:
    return a + b

@server.tool()
def summarise(points: list[Point], unit: Unit = Unit.C, tag: int | str | None = None,
              mode: Literal["fast", "slow"] = "fast", extra: dict[int, str] | None = None,
              ) -> Summary:
    return Summary(len(points), unit)

assert "jsonschema" not in sys.modules, "registering a typed tool pulled in jsonschema"
with mcpsync.Client.memory(server) as client:
    assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
    done = client.call_tool("summarise", {"points": [{"x": 1}, {"x": 2.5, "y": 1}],
                                          "unit": "f", "tag": 7, "extra": {"1": "one"}})
    assert done.structured_content == {"count": 2, "unit": "f"}, done
    assert "jsonschema" not in sys.modules, "a valid tools/call pulled in jsonschema"
    refused = client.call_tool("summarise", {"points": [{"y": 1}]})
    assert refused.is_error
    assert refused.text == ("Invalid arguments for tool 'summarise': "
                            "at 'points/0': 'x' is a required property"), refused.text
    assert "jsonschema" in sys.modules  # imported to word the error, on first need
"""

HAND_WRITTEN = """
import sys
import mcpsync
server = mcpsync.Server("s")

@server.tool(input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
def count(**arguments):
    return str(arguments)

assert "jsonschema" in sys.modules  # a hand-written schema is checked at registration
"""


def _run(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_import_and_first_tool_call_do_not_import_jsonschema():
    _run(PROBE)


def test_a_hand_written_schema_is_still_checked_by_jsonschema():
    _run(HAND_WRITTEN)


def _first_answers(client: Client) -> None:
    """Two valid calls, then a refused one: only the refusal imports jsonschema."""
    done = client.call_tool("centre", {"points": [{"x": 1}, {"x": 3, "y": 2}], "label": 4})
    assert done.structured_content == {"x": 2.0, "y": 1.0}
    assert client.call_tool("jsonschema_loaded").structured_content == {"result": False}
    refused = client.call_tool("centre", {"points": [{"y": 1}]})
    assert refused.text == ("Invalid arguments for tool 'centre': "
                            "at 'points/0': 'x' is a required property")
    assert client.call_tool("jsonschema_loaded").structured_content == {"result": True}


@pytest.mark.parametrize("version", ERAS)
def test_a_stdio_server_answers_without_importing_jsonschema(version):
    with Client.stdio([sys.executable, str(SERVER)], env={"PYTHONPATH": str(ROOT)},
                      protocol_version=version, timeout=60) as client:
        _first_answers(client)


@pytest.mark.parametrize("version", ERAS)
def test_an_http_server_answers_without_importing_jsonschema(version):
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with serving_process([sys.executable, str(SERVER), "--http", str(port)], port, cwd=ROOT,
                         env=env) as base, \
            Client.http(f"{base}/mcp", protocol_version=version, timeout=60) as client:
        _first_answers(client)


#: What a stdio server that answers plain tool calls never needs: OpenSSL (hashlib, only for
#: multi round-trip state and principals), the task stores (sqlite3), random numbers, dates
#: and the store contracts. Each was once imported at start-up by a module that needed it
#: only later (about 5 MiB of RSS and 10 ms of cold start between them).
NOT_AT_START = ["hashlib", "_hashlib", "hmac", "sqlite3", "secrets", "random", "datetime",
                "mcpsync.stores.tasks", "mcpsync.stores.sessions", "mcpsync.stores.events",
                "mcpsync.tasks.surface", "mcpsync.tasks.runner"]


@pytest.mark.parametrize("version", ERAS)
def test_a_stdio_server_answers_without_what_it_does_not_use(version):
    with Client.stdio([sys.executable, str(SERVER)], env={"PYTHONPATH": str(ROOT)},
                      protocol_version=version, timeout=60) as client:
        done = client.call_tool("centre", {"points": [{"x": 1}, {"x": 3}]})
        assert done.structured_content == {"x": 2.0, "y": 0.0}
        assert client.call_tool("loaded", {"names": NOT_AT_START}).structured_content == {
            "result": []}
