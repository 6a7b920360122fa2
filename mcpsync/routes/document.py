"""An OpenAPI 3.0 / 3.1 document: loaded from a dict, a file or a URL, its references
followed, and its schemas turned into the JSON Schema 2020-12 an MCP tool advertises.

Why schemas are rewritten rather than inlined: a schema may refer to itself (a tree, a
comment with replies), which no inlining ends. So each schema a tool needs is copied with
every ``$ref`` it reaches gathered under the tool schema's own ``$defs`` (and the
reference rewritten to ``#/$defs/NAME``): a recursive type stays recursive, finitely. A
reference that can only lead back to itself without ever reaching a value
(``A: {allOf: [{$ref: A}]}``) would make any validator recurse for ever, so it is refused.

OpenAPI 3.0 schemas are not JSON Schema: ``nullable: true`` becomes a ``"null"`` type and
the boolean ``exclusiveMinimum``/``exclusiveMaximum`` become the numeric forms; 3.1
schemas are JSON Schema already. A property marked ``readOnly`` is left out of an input
schema and one marked ``writeOnly`` out of an output schema (a server's generated ``id``
is not something a caller sends).

Every walk is bounded by :class:`~mcpsync.routes.limits.RouteLimits`: depth, nodes,
reference chains, and the size of what is read.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import requests

from ..errors import MessageTooLargeError
from ..protocol import jsonrpc
from ..protocol.deadline import Deadline
from ..transports.http.deadline import exchange, timeouts, tracked_session
from ..transports.http.io import local_error, read_body
from .limits import RouteLimits

__all__ = ["Document", "OpenAPIError", "load_document"]

Direction = Literal["input", "output"]

#: Keywords whose subschemas apply to the same value (following only these from a
#: ``$ref`` and coming back to it never reaches a value).
_SAME_VALUE: Final = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")
_DEF_NAME: Final = re.compile(r"[^A-Za-z0-9_.-]+")


class OpenAPIError(ValueError):
    """The document cannot be turned into a server: not OpenAPI 3, a reference that leads
    nowhere or in a circle, or past one of :class:`RouteLimits`' bounds. The message names
    where (the operation, the pointer) and which bound."""


def load_document(spec: Mapping[str, Any] | str | os.PathLike[str], *,
                  session: requests.Session | None = None,
                  limits: RouteLimits | None = None) -> Document:
    """The document ``spec`` names: a mapping (used as it is, never changed), a path to a
    JSON or YAML file, or an ``http(s)://`` URL fetched with ``session`` (the caller's
    ``requests.Session``, never changed; else one of mcpsync's own) within
    ``limits.fetch_timeout`` seconds and ``limits.max_document_bytes``."""
    limits = limits or RouteLimits()
    if isinstance(spec, Mapping):
        return Document(spec, limits)
    text = os.fspath(spec)
    if text.startswith(("http://", "https://")):
        raw = _fetch(text, session, limits)
        document = Document(_parse(raw, text), limits)
        document.source = text
        return document
    path = Path(text)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise OpenAPIError(f"cannot read the OpenAPI document {text}: {exc.strerror}") from None
    if size > limits.max_document_bytes:
        raise OpenAPIError(f"the OpenAPI document {text} is {size} bytes, over the "
                           f"{limits.max_document_bytes}-byte bound (max_document_bytes)")
    return Document(_parse(path.read_bytes(), text), limits)


def _fetch(url: str, session: requests.Session | None, limits: RouteLimits) -> bytes:
    deadline = Deadline(limits.fetch_timeout, f"fetching the OpenAPI document {url}")
    own = session is None
    client = tracked_session() if session is None else session
    try:
        with exchange(deadline), client.get(
                url, stream=True, headers={"Accept": "application/json"},
                timeout=timeouts(deadline, limits.fetch_timeout, limits.fetch_timeout),
        ) as response:
            if response.status_code != 200:
                raise OpenAPIError(f"fetching the OpenAPI document {url}: HTTP "
                                   f"{response.status_code}")
            return read_body(response, limits.max_document_bytes)
    except requests.RequestException as exc:
        raise OpenAPIError(str(local_error(exc, f"GET {url}"))) from None
    except MessageTooLargeError as exc:
        raise OpenAPIError(f"the OpenAPI document {url}: {exc} (max_document_bytes)") from None
    except TimeoutError as exc:
        raise OpenAPIError(str(exc)) from None
    finally:
        if own:
            client.close()


def _parse(raw: bytes, where: str) -> Any:
    stripped = raw.lstrip()
    if stripped[:1] in (b"{", b"["):
        try:
            return jsonrpc.loads(raw)
        except ValueError as exc:
            raise OpenAPIError(f"the OpenAPI document {where} is not valid JSON: {exc}") from None
    try:
        import yaml
    except ImportError:
        raise OpenAPIError(f"the OpenAPI document {where} is not JSON, and reading YAML "
                           "needs PyYAML (pip install 'mcpsync[routes]')") from None
    try:
        return yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError) as exc:
        raise OpenAPIError(f"the OpenAPI document {where} is neither JSON nor YAML: "
                           f"{str(exc).splitlines()[0]}") from None


class Document:
    """A loaded OpenAPI 3.x document. Reading it never changes the mapping it holds."""

    def __init__(self, data: Any, limits: RouteLimits | None = None) -> None:
        if not isinstance(data, Mapping):
            raise OpenAPIError("an OpenAPI document is a JSON object")
        version = data.get("openapi")
        if not isinstance(version, str) or not version.startswith(("3.0", "3.1", "3.2")):
            if "swagger" in data:
                raise OpenAPIError("a Swagger 2.0 document is not supported: convert it to "
                                   "OpenAPI 3 first")
            raise OpenAPIError(f"not an OpenAPI 3.0/3.1 document (openapi: {version!r})")
        if not isinstance(data.get("paths", {}), Mapping):
            raise OpenAPIError("the document's 'paths' is not an object")
        self.data = data
        self.version = version
        self.limits = limits or RouteLimits()
        #: OpenAPI 3.0 schemas need converting (nullable, boolean exclusive bounds).
        self.legacy = version.startswith("3.0")
        #: The URL it was fetched from: a relative server URL is relative to it.
        self.source: str | None = None

    @property
    def title(self) -> str:
        info = self.data.get("info")
        title = info.get("title") if isinstance(info, Mapping) else None
        return title if isinstance(title, str) and title else "openapi"

    def server_url(self) -> str | None:
        """The first ``servers`` entry, its variables set to their defaults (made absolute
        against the document's own URL when it is relative and the document was fetched)."""
        servers = self.data.get("servers")
        if not isinstance(servers, list) or not servers or not isinstance(servers[0], Mapping):
            return None
        url = servers[0].get("url")
        if not isinstance(url, str):
            return None
        variables = servers[0].get("variables")
        if isinstance(variables, Mapping):
            for name, variable in variables.items():
                if isinstance(variable, Mapping) and isinstance(variable.get("default"), str):
                    url = url.replace("{" + str(name) + "}", variable["default"])
        if self.source is not None:
            url = urllib.parse.urljoin(self.source, url)
        return url

    # -- references ------------------------------------------------------------------------

    def pointer(self, ref: str) -> Any:
        """What a local reference (``#/components/schemas/Pet``) points at."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise OpenAPIError(f"the reference {ref!r} is not local to the document "
                               "(only '#/...' references are followed)")
        node: Any = self.data
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise OpenAPIError(f"the reference {ref!r} points at nothing")
        return node

    def deref(self, node: Any, where: str) -> Any:
        """``node`` with its ``$ref`` chain followed (a parameter, a body, a response):
        a circle or a chain longer than ``max_ref_chain`` is an error."""
        seen: list[str] = []
        while isinstance(node, Mapping) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise OpenAPIError(f"{where}: the references {' -> '.join([*seen, ref])} "
                                   "go round in a circle")
            if len(seen) >= self.limits.max_ref_chain:
                raise OpenAPIError(f"{where}: more than {self.limits.max_ref_chain} references "
                                   "in a chain (max_ref_chain)")
            seen.append(ref)
            node = self.pointer(ref)
        return node

    # -- schemas ---------------------------------------------------------------------------

    def schema(self, schema: Any, where: str, direction: Direction) -> SchemaCopy:
        """``schema`` as JSON Schema 2020-12, with the references it reaches under
        ``$defs`` (see the module doc). ``where`` names it in errors."""
        return SchemaCopy(self, where, direction).add_root(schema)


class SchemaCopy:
    """One tool's schema being copied: its root, its ``$defs``, the nodes counted so far."""

    def __init__(self, document: Document, where: str, direction: Direction) -> None:
        self.document = document
        self.where = where
        self.direction = direction
        self.defs: dict[str, Any] = {}
        self._names: dict[str, str] = {}  # reference -> def name
        self._nodes = 0
        self._checked = 0  # definitions checked for circles so far
        self.root: Any = {}

    def add_root(self, schema: Any) -> SchemaCopy:
        self.root = self.copy(schema)
        return self

    def copy(self, schema: Any) -> Any:
        """One more schema of this tool (a parameter's, a property's), rewritten; its
        references join the shared ``$defs``."""
        pending: list[str] = []
        result = self._convert(schema, 0, pending)
        while pending:
            ref = pending.pop()
            name = self._names[ref]
            target = self.document.pointer(ref)
            self.defs[name] = {}  # taken, so a reference back to it is not queued again
            self.defs[name] = self._convert(target, 0, pending)
        if len(self.defs) != self._checked:
            self._check_cycles()
            self._checked = len(self.defs)
        return result

    def with_defs(self, root: Any) -> Any:
        """``root`` with this copy's ``$defs`` (when it has any)."""
        if not self.defs or not isinstance(root, dict):
            return root
        return {**root, "$defs": dict(self.defs)}

    def _name_for(self, ref: str, pending: list[str]) -> str:
        name = self._names.get(ref)
        if name is None:
            base = _DEF_NAME.sub("_", ref.rsplit("/", 1)[-1]) or "schema"
            name, n = base, 1
            taken = set(self._names.values())
            while name in taken:
                n += 1
                name = f"{base}_{n}"
            self._names[ref] = name
            pending.append(ref)
        return name

    def _convert(self, node: Any, depth: int, pending: list[str]) -> Any:
        limits = self.document.limits
        if depth > limits.max_depth:
            raise OpenAPIError(f"{self.where}: a schema nests deeper than {limits.max_depth} "
                               "levels (max_depth)")
        self._nodes += 1
        if self._nodes > limits.max_schema_nodes:
            raise OpenAPIError(f"{self.where}: the schema has more than "
                               f"{limits.max_schema_nodes} parts (max_schema_nodes)")
        if isinstance(node, list):
            return [self._convert(item, depth + 1, pending) for item in node]
        if not isinstance(node, Mapping):
            return node
        if "$ref" in node and isinstance(node["$ref"], str):
            ref = node["$ref"]
            self.document.pointer(ref)  # points at something, or a clear error now
            out: dict[str, Any] = {"$ref": f"#/$defs/{self._name_for(ref, pending)}"}
            for key, value in node.items():  # 3.1 allows siblings of $ref
                if key != "$ref" and not self.document.legacy:
                    out[key] = self._convert(value, depth + 1, pending)
            return out
        out = {}
        for key, value in node.items():
            key = str(key)
            if key in ("properties", "patternProperties", "$defs", "definitions",
                       "dependentSchemas") and isinstance(value, Mapping):
                out[key] = {str(k): self._convert(v, depth + 2, pending)
                            for k, v in value.items() if not self._hidden(v)}
            elif key in ("example", "xml", "externalDocs", "discriminator"):
                continue  # OpenAPI's own words, not JSON Schema's
            else:
                out[key] = self._convert(value, depth + 1, pending)
        if "properties" in node and isinstance(node["properties"], Mapping):
            hidden = {str(k) for k, v in node["properties"].items() if self._hidden(v)}
            if hidden and isinstance(out.get("required"), list):
                out["required"] = [r for r in out["required"] if r not in hidden]
                if not out["required"]:
                    del out["required"]
        if self.document.legacy:
            _from_openapi_30(out)
        return out

    def _hidden(self, schema: Any) -> bool:
        """A property this direction leaves out (``readOnly`` in, ``writeOnly`` out)."""
        if not isinstance(schema, Mapping):
            return False
        flag = "readOnly" if self.direction == "input" else "writeOnly"
        return schema.get(flag) is True

    def _check_cycles(self) -> None:
        """Refuse a definition that reaches itself through same-value keywords only."""
        edges = {name: _same_value_refs(schema) for name, schema in self.defs.items()}
        done: set[str] = set()
        for start in edges:
            stack = [(start, [start])]
            while stack:
                name, trail = stack.pop()
                for target in edges.get(name, ()):
                    if target == start:
                        raise OpenAPIError(
                            f"{self.where}: the schema references {' -> '.join([*trail, start])} "
                            "go round in a circle without ever describing a value")
                    if target not in done and target not in trail:
                        stack.append((target, [*trail, target]))
            done.add(start)


def _same_value_refs(schema: Any) -> set[str]:
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                found.add(ref[len("#/$defs/"):])
            for key in _SAME_VALUE:
                if key in node:
                    stack.append(node[key])
    return found


def _from_openapi_30(node: dict[str, Any]) -> None:
    """An OpenAPI 3.0 schema object's own keywords made JSON Schema 2020-12, in place."""
    if node.pop("nullable", False) is True:
        kind = node.get("type")
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            node["type"] = [*kind, "null"]
        elif "enum" in node and isinstance(node["enum"], list) and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        flag = node.get(exclusive)
        if isinstance(flag, bool):
            if flag and bound in node:
                node[exclusive] = node.pop(bound)
            else:
                del node[exclusive]
