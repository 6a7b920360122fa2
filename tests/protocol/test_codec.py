"""The wire types' declarations are dataclasses-json's, converted without importing it.

``mcpsync.codec`` writes each field's settings in dataclasses-json's layout and compiles
its own conversions from them, so that a server's cold start does not pay for importing
dataclasses-json and marshmallow. These tests pin down that nothing changed for a user:
the same wire names as the library's camelCase, the same ``to_dict``/``from_dict`` methods,
and the library itself, applied by hand, reading the same declarations.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import mcpsync.types as wire_types
from mcpsync.codec import _camel, from_wire, to_wire
from mcpsync.types import CallToolResult, TextContent, Tool

ROOT = Path(__file__).resolve().parents[2]


def _wire_classes() -> list[type]:
    exported = (getattr(wire_types, name) for name in wire_types.__all__)  # imported lazily
    return [cls for cls in exported
            if isinstance(cls, type) and dataclasses.is_dataclass(cls)
            and hasattr(cls, "__mcpsync_wire__")]


def test_every_wire_name_is_dataclasses_json_camel_case():
    from dataclasses_json import LetterCase

    classes = _wire_classes()
    assert len(classes) > 20
    for cls in classes:
        for field in dataclasses.fields(cls):
            assert _camel(field.name) == LetterCase.CAMEL(field.name), (cls, field.name)


def test_the_dataclass_json_methods_are_there_and_speak_the_wire_format():
    tool = Tool(name="add", input_schema={"type": "object"}, description="Adds.")
    assert tool.to_dict() == to_wire(tool) == {
        "name": "add", "inputSchema": {"type": "object"}, "description": "Adds."}
    assert Tool.from_dict(tool.to_dict()) == tool
    assert Tool.from_json(tool.to_json()) == tool
    result = CallToolResult(content=[TextContent(text="hi")], meta={"k": 1})
    assert json.loads(result.to_json())["_meta"] == {"k": 1}
    assert CallToolResult.from_dict(result.to_dict()) == result
    with pytest.raises(ValueError):
        Tool.from_dict({"description": "no name"})


def test_dataclasses_json_reads_the_same_declarations():
    # Applied by hand to a copy of a wire type, the library encodes what the codec does.
    from dataclasses_json import LetterCase, dataclass_json

    @dataclass_json(letter_case=LetterCase.CAMEL)
    @dataclasses.dataclass
    class Copy(wire_types.Resource):
        pass

    resource = Copy(uri="file:///a", name="a", mime_type="text/plain", meta={"x": 1})
    assert Copy.to_dict(resource) == to_wire(resource)
    assert from_wire(wire_types.Resource, to_wire(resource)).mime_type == "text/plain"


def test_importing_mcpsync_does_not_import_dataclasses_json():
    code = ("import sys, mcpsync, mcpsync.server.server, mcpsync.server.stdio\n"
            "assert mcpsync.Server\n"
            "loaded = [m for m in ('dataclasses_json', 'marshmallow') if m in sys.modules]\n"
            "print(loaded)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
