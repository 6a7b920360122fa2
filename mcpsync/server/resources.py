"""Resources: fixed URIs and RFC 6570 templates, reading, and subscriptions."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..codec import to_wire
from ..dispatch.context import HandlerContext
from ..dispatch.pagination import listing
from ..dispatch.schema import to_json_value
from ..dispatch.simple import StringBinding
from ..errors import InvalidParamsError, MCPError, RequestCancelledError, ResourceNotFoundError
from ..protocol.tool_outcome import handler_failed
from ..protocol.uritemplate import UriTemplate, is_template
from ..protocol.versions import LATEST_LEGACY, features
from ..types import Icon
from ..types.content import BlobResourceContents, TextResourceContents
from .component_options import NO_OPTIONS, Gate, Kind, modern
from .scopes import as_scopes, permits


@dataclass
class RegisteredResource:
    """A fixed resource or a template, with the function that reads it."""

    binding: StringBinding
    description: dict[str, Any]
    template: UriTemplate | None
    mime_type: str | None
    #: OAuth scopes a reader's access token must carry (read, subscribe, complete),
    #: checked before dispatch by :mod:`mcpsync.server.scopes`.
    scopes: tuple[str, ...] = ()
    #: What each extension that claimed it keeps of its options, by the extension's key.
    options: Mapping[str, object] = field(default_factory=lambda: NO_OPTIONS)

    @property
    def key(self) -> str:
        return self.template.template if self.template else self.description["uri"]

    @property
    def kind(self) -> Kind:
        return "template" if self.template else "resource"


def describe_resource(
    fn: Callable[..., Any], uri: str, *, name: str | None, title: str | None,
    description: str | None, mime_type: str | None, size: int | None,
    icons: list[Icon] | None, annotations: dict[str, Any] | None, meta: dict[str, Any] | None,
    scopes: Iterable[str] = (), options: Mapping[str, object] = NO_OPTIONS,
) -> RegisteredResource:
    """A resource read by ``fn`` at ``uri`` (fixed, or an RFC 6570 template whose variables
    must cover ``fn``'s required parameters), described for ``resources/list``."""
    binding = StringBinding(fn, HandlerContext, f"resource {uri!r}")
    template = UriTemplate(uri) if is_template(uri) else None
    wire: dict[str, Any] = {"uriTemplate" if template else "uri": uri,
                            "name": name or fn.__name__}
    for key, value in (("title", title), ("description", description or
                       binding.description), ("mimeType", mime_type),
                       ("size", None if template else size), ("annotations", annotations),
                       ("_meta", meta)):
        if value is not None:
            wire[key] = value
    if icons:
        wire["icons"] = to_wire(list(icons))
    if template is not None:
        missing = {p.name for p in binding.parameters if p.required} - set(
            template.variables)
        if missing:
            raise TypeError(f"resource {uri!r}: parameters {sorted(missing)} are not "
                            "template variables")
    return RegisteredResource(binding, wire, template, mime_type, as_scopes(scopes), options)


class ResourceRegistry:
    """Resources and templates in registration order. Thread-safe."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._fixed: dict[str, RegisteredResource] = {}
        self._templates: dict[str, RegisteredResource] = {}
        self._on_change = on_change
        #: ``resources/list`` and ``resources/templates/list`` leave out what the caller's
        #: principal (``ctx.auth``) lacks the ``scopes`` for. Off by default, as for tools
        #: (a client may see what it must step up for); on, a 2026-07-28 list is marked
        #: ``cacheScope: "private"``.
        self.hide_unauthorized = False
        #: Whether any resource or template was registered with ``scopes``.
        self.has_scoped = False
        #: Who may see which resource or template (set by visibility when something is
        #: hidden): a hidden one is read, listed and completed as if it did not exist.
        self.gate: Gate | None = None

    def add(self, resource: RegisteredResource) -> None:
        table = self._templates if resource.template else self._fixed
        with self._lock:
            if resource.key in table:
                raise ValueError(f"a resource {resource.key!r} is already registered")
            table[resource.key] = resource
            self._note_scoped()
        if self._on_change is not None:
            self._on_change()

    def remove(self, uri_or_template: str) -> None:
        with self._lock:
            if self._fixed.pop(uri_or_template, None) is None and self._templates.pop(
                    uri_or_template, None) is None:
                raise KeyError(uri_or_template)
            self._note_scoped()
        if self._on_change is not None:
            self._on_change()

    def _note_scoped(self) -> None:
        """Recount (under the lock) whether any resource needs scopes."""
        self.has_scoped = any(r.scopes for table in (self._fixed, self._templates)
                              for r in table.values())

    def __len__(self) -> int:
        return len(self._fixed) + len(self._templates)

    def template(self, uri_template: str) -> RegisteredResource | None:
        return self._templates.get(uri_template)

    # -- protocol methods ------------------------------------------------------------------

    def list(self, ctx: HandlerContext, params: dict[str, Any], page_size: int) -> dict[str, Any]:
        return self._listing("resources", self._fixed, ctx, params, page_size)

    def list_templates(
        self, ctx: HandlerContext, params: dict[str, Any], page_size: int
    ) -> dict[str, Any]:
        return self._listing("resourceTemplates", self._templates, ctx, params, page_size)

    def _listing(self, key: str, table: dict[str, RegisteredResource], ctx: HandlerContext,
                 params: dict[str, Any], page_size: int) -> dict[str, Any]:
        with self._lock:
            items = list(table.values())
        hide = self.hide_unauthorized
        gate = self.gate
        result = listing(key, [r.description for r in items
                               if (not hide or permits(ctx.auth, r.scopes)) and (
                                   gate is None or gate.allows(r.kind, r.key, r.options, ctx))],
                         params.get("cursor"), page_size)
        if (hide or (gate is not None and gate.private)) and modern(ctx):
            result["cacheScope"] = "private"  # another principal sees another list
        return result

    def resolve(self, uri: str, ctx: HandlerContext | None = None
                ) -> tuple[RegisteredResource, dict[str, str]] | None:
        """The resource or template ``uri`` names and the template's values; with
        ``ctx``, only one its caller may see (a hidden fixed resource does not shadow a
        template that matches the same URI: the reader gets what it would without it)."""
        gate = self.gate if ctx is not None else None
        fixed = self._fixed.get(uri)
        if fixed is not None and (gate is None or gate.allows(
                "resource", fixed.key, fixed.options, ctx)):  # type: ignore[arg-type]
            return fixed, {}
        for resource in list(self._templates.values()):
            assert resource.template is not None
            values = resource.template.match(uri)
            if values is not None and (gate is None or gate.allows(
                    "template", resource.key, resource.options, ctx)):  # type: ignore[arg-type]
                return resource, values
        return None

    def hidden(self, uri: str, ctx: HandlerContext) -> bool:
        """Whether ``uri`` names a registered resource (or matches a template) that the
        caller of ``ctx`` may not see: its updates are not theirs to hear either. A URI
        nothing registered names is not hidden (a read function may serve any URI)."""
        return self.gate is not None and self.resolve(uri, ctx) is None and (
            self.resolve(uri) is not None)

    def visible_template(self, uri_template: str,
                         ctx: HandlerContext) -> RegisteredResource | None:
        """The template ``uri_template`` if the caller of ``ctx`` may see it."""
        found = self._templates.get(uri_template)
        gate = self.gate
        if found is None or gate is None or gate.allows("template", found.key, found.options,
                                                        ctx):
            return found
        return None

    def all(self) -> tuple[RegisteredResource, ...]:
        """The resources and templates registered now."""
        with self._lock:
            return (*self._fixed.values(), *self._templates.values())

    def read(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParamsError('Invalid params: "uri" must be a string')
        version = ctx.session.protocol_version or LATEST_LEGACY
        not_found = features(version).resource_not_found_code
        try:
            return self.read_uri(uri, ctx)
        except ResourceNotFoundError as exc:
            raise MCPError(exc.message, data=exc.data or {"uri": uri}, code=not_found) from None
        except (MCPError, RequestCancelledError):
            raise
        except Exception as exc:  # the read function's failure: one policy (tool_outcome)
            raise handler_failed(f"resource {uri}", exc, ctx) from None

    def read_uri(self, uri: str, ctx: HandlerContext) -> dict[str, Any]:
        """The ``resources/read`` result of ``uri``, read with ``ctx`` (also what
        ``ctx.read_resource`` serves); :class:`ResourceNotFoundError` when nothing matches
        or the read function raised it."""
        found = self.resolve(uri, ctx)
        if found is None:
            raise ResourceNotFoundError(f"Resource not found: {uri}", data={"uri": uri})
        resource, values = found
        value = resource.binding.call(values, ctx)
        return {"contents": to_contents(uri, value, resource.mime_type)}


def to_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """A read function's return value as ``contents``.

    ``str`` → text, ``bytes`` → base64 blob, dict/list → JSON text (``application/json``),
    contents objects (or a list of them, e.g. a directory) pass through.
    """
    if isinstance(value, (TextResourceContents, BlobResourceContents)):
        return [to_wire(value)]
    if isinstance(value, list) and value and all(
            isinstance(v, (TextResourceContents, BlobResourceContents)) for v in value):
        return [to_wire(v) for v in value]
    item: dict[str, Any] = {"uri": uri}
    if isinstance(value, str):
        item["text"] = value
        default_mime = "text/plain"
    elif isinstance(value, (bytes, bytearray, memoryview)):
        item["blob"] = base64.b64encode(bytes(value)).decode("ascii")
        default_mime = "application/octet-stream"
    else:
        try:
            item["text"] = json.dumps(to_json_value(value), ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise MCPError(f"the resource {uri} cannot be encoded as JSON: {exc}",
                           data={"uri": uri}) from None
        default_mime = "application/json"
    item["mimeType"] = mime_type or default_mime
    return [item]
