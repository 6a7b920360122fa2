"""Validate what mcpsync puts on the wire against the spec's own JSON Schemas."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema

SPEC_DIR = Path(
    os.environ.get("MCPSYNC_SPEC_DIR")
    or Path(__file__).resolve().parents[1].parent / "shared" / "spec"
)

#: The result type each request method must produce.
RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "logging/setLevel": "EmptyResult",
}


@functools.cache
def _schema(revision: str) -> dict[str, Any]:
    with open(SPEC_DIR / revision / "schema.json", encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


@functools.cache
def validator(revision: str, definition: str) -> jsonschema.protocols.Validator:
    schema = _schema(revision)
    defs_key = "$defs" if "$defs" in schema else "definitions"
    root = {defs_key: schema[defs_key], "$ref": f"#/{defs_key}/{definition}"}
    cls = jsonschema.validators.validator_for(schema)
    return cls(root)  # type: ignore[no-any-return]


def validate(revision: str, definition: str, instance: Any) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``instance`` is a valid ``definition``."""
    validator(revision, definition).validate(instance)


def validate_message(revision: str, message: dict[str, Any], method: str | None = None) -> None:
    """Validate one JSON-RPC message; with ``method``, also its result against its type.

    JSON-RPC 2.0 (§5.1) requires ``"id": null`` on an error about a message whose id could
    not be read; the MCP schema types ``id`` as string|integer and makes it optional, so
    such an error is validated without its null id.
    """
    if "error" in message and message.get("id") is None:
        message = {k: v for k, v in message.items() if k != "id"}
    validate(revision, "JSONRPCMessage", message)
    if method is not None and "result" in message and method in RESULT_TYPES:
        validate(revision, RESULT_TYPES[method], message["result"])
