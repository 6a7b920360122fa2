"""Validate what mcpsync puts on the wire against the spec's own JSON Schemas.

The schemas are not part of this repository: they are read from ``MCPSYNC_SPEC_DIR`` or,
by default, from ``<clone>/../shared/spec`` (the layout CI provides). On a bare clone that
folder does not exist; then :func:`validate` and :func:`validate_message` check nothing,
the rest of every test still runs, and ``tests/conftest.py`` prints one line at the top of
the run saying so. ``MCPSYNC_REQUIRE_SPEC=1`` (set by ``.ci/run``) turns a missing folder into
a usage error before any test runs, so CI can not lose the schema checks silently. An
explicit ``MCPSYNC_SPEC_DIR`` that does not exist is always such an error.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema

SPEC_ENV = "MCPSYNC_SPEC_DIR"
REQUIRE_ENV = "MCPSYNC_REQUIRE_SPEC"
DEFAULT_SPEC_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "spec"
SPEC_DIR = Path(os.environ.get(SPEC_ENV) or DEFAULT_SPEC_DIR)

#: The result type each request method must produce.
RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "logging/setLevel": "EmptyResult",
}


def available() -> bool:
    """True when the schemas can be read (so every validation really runs)."""
    return SPEC_DIR.is_dir()


def required() -> bool:
    """True when a missing spec folder must fail the run instead of skipping validation."""
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0") or bool(os.environ.get(SPEC_ENV))


def unavailable_notice() -> str:
    """The one line shown at the top of a run without the schemas."""
    return (f"spec schemas not found at {SPEC_DIR}: wire messages are NOT validated against "
            f"the MCP JSON Schemas in this run (set {SPEC_ENV}=<spec folder>; CI sets "
            f"{REQUIRE_ENV}=1)")


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
    """Raise ``jsonschema.ValidationError`` unless ``instance`` is a valid ``definition``.

    Without the spec folder (and without ``MCPSYNC_REQUIRE_SPEC``) this checks nothing:
    see the module docstring.
    """
    if not available() and not required():
        return
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
