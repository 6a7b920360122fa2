"""pydantic models and constraint metadata in tool signatures (skipped without pydantic),
and mcpsync without pydantic (never imported unless the program did)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client
from tests.helpers import WAIT, require_module

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def connect(transport: str, version: str) -> Iterator[Client]:
    require_module("pydantic")
    from . import pydantic_server

    if transport == "memory":
        with Client.memory(pydantic_server.server, protocol_version=version,
                           timeout=WAIT) as client:
            yield client
    else:
        with Client.stdio([sys.executable, "-m", "tests.server.pydantic_server"], cwd=ROOT,
                          protocol_version=version, timeout=WAIT) as client:
            yield client


ORDER = {"id": 1, "placed": "2026-07-28T09:00:00Z", "items": [{"sku": "a", "count": 2}]}


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
@pytest.mark.parametrize("transport", ["memory", "stdio"])
def test_pydantic_models_in_and_out(transport: str, version: str) -> None:
    with connect(transport, version) as client:
        tool = client.list_tools()[0]
        props = tool.input_schema["properties"]
        assert props["order"]["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
        assert tool.input_schema["$defs"]["Item"]["properties"]["count"] == {
            "description": "How many of it", "minimum": 1, "title": "Count", "type": "integer"}
        assert props["discount"] == {"type": "integer", "description": "Percent off",
                                     "minimum": 0, "maximum": 50, "default": 0}
        assert props["note"] == {"type": "string", "minLength": 2, "maxLength": 10,
                                 "default": "ok"}
        assert props["extra"] == {"type": "integer", "description": "Extra units",
                                  "exclusiveMinimum": 0, "default": 1}
        assert tool.input_schema["required"] == ["order"]
        assert tool.output_schema is not None
        assert tool.output_schema["title"] == "Order"
        assert "Item" in tool.output_schema["$defs"]
        result = client.call_tool("place", {"order": ORDER, "discount": 10})
        assert result.is_error is False, result.text
        assert result.structured_content == {
            "id": 13, "placed": "2026-07-28T09:00:00Z", "items": [{"sku": "a", "count": 3}]}


@pytest.mark.parametrize(("arguments", "why"), [
    ({"discount": 51}, "51 is greater than the maximum of 50"),
    ({"note": "x"}, "'x' is too short"),
    ({"even": 3}, "3 does not satisfy <lambda>"),
    ({"extra": 0}, "0 is less than or equal to the minimum of 0"),
    ({"order": {**ORDER, "items": [{"sku": "a", "count": 0}]}},
     "0 is less than the minimum of 1"),
    ({"order": {**ORDER, "placed": "soon"}}, "at 'placed': Input should be a valid datetime"),
])
def test_constraints_are_enforced(arguments: dict[str, Any], why: str) -> None:
    with connect("memory", HANDSHAKE) as client:
        result = client.call_tool("place", {"order": ORDER, **arguments})
        assert result.is_error is True
        assert why in result.text


def test_annotated_types_constraints_work_without_pydantic() -> None:
    """Run in a fresh interpreter where importing pydantic fails: annotated-types metadata
    still constrains, the new scalar types still work, and nothing imports pydantic."""
    require_module("annotated_types")
    script = textwrap.dedent("""
        import sys
        sys.modules["pydantic"] = None          # import pydantic -> ImportError
        import datetime
        from typing import Annotated
        import annotated_types as at
        from mcpsync import Client, Server

        server = Server("plain")

        @server.tool()
        def pick(n: Annotated[int, at.Ge(1), at.Le(3)], day: datetime.date) -> str:
            return f"{n} {day:%A}"

        with Client.memory(server) as client:
            schema = client.list_tools()[0].input_schema["properties"]["n"]
            assert schema == {"type": "integer", "minimum": 1, "maximum": 3}, schema
            assert client.call_tool("pick", {"n": 2, "day": "2026-07-28"}).text == "2 Tuesday"
            assert client.call_tool("pick", {"n": 4, "day": "2026-07-28"}).is_error
        assert sys.modules["pydantic"] is None
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=WAIT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_registering_tools_does_not_import_pydantic() -> None:
    script = textwrap.dedent("""
        import sys
        from dataclasses import dataclass
        from mcpsync import Server

        @dataclass
        class P:
            x: int

        server = Server("s")

        @server.tool()
        def f(p: P, n: int = 1) -> P:
            return p

        print("pydantic" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=WAIT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
