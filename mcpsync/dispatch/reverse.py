"""Requests a server handler sends back to its client: elicitation, sampling, roots.

:class:`ReverseCalls` is what a context's ``elicit``, ``elicit_url``, ``sample`` and
``list_roots`` do. Each call checks the capability the client declared (and the negotiated
revision), builds the request, sends it through the context's outlet (the one its
``ctx.request`` uses, so cancelling the tool call cancels it too) and decodes the answer.
A missing capability is a :class:`~mcpsync.errors.ProtocolStateError` raised before
anything is sent: the spec forbids asking for what the client cannot do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..codec import from_wire, to_wire
from ..errors import MISSING_CLIENT_CAPABILITY, MCPError, ProtocolStateError
from ..protocol.versions import features
from ..types.client_features import CreateMessageResult, ElicitResult, SamplingMessage
from ..types.resources import Root
from .ports import Outlet, SessionInfo
from .schema import SchemaBuilder

_PRIMITIVE = {"string", "number", "integer", "boolean"}


def elicitation_schema(schema: dict[str, Any] | type) -> tuple[dict[str, Any], type | None]:
    """A ``requestedSchema`` from a dict or a flat dataclass of primitive fields."""
    if isinstance(schema, dict):
        return schema, None
    if not (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
        raise TypeError("schema must be a JSON Schema dict or a dataclass")
    built, _ = SchemaBuilder().build(schema)
    for name, prop in built.get("properties", {}).items():
        kind = prop.get("type")
        if kind not in _PRIMITIVE and not (kind == "array" and "enum" in prop.get("items", {})):
            raise TypeError(f"elicitation field {name!r} must be a primitive or an enum list")
    return built, schema


def _messages(messages: str | Sequence[Any]) -> list[Any]:
    if isinstance(messages, str):
        return [{"role": "user", "content": {"type": "text", "text": messages}}]
    out = []
    for item in messages:
        if isinstance(item, str):
            out.append({"role": "user", "content": {"type": "text", "text": item}})
        elif isinstance(item, SamplingMessage):
            out.append(to_wire(item))
        else:
            out.append(to_wire(item))
    return out


class ReverseCalls:
    """The questions a context may ask its client: who the client is (``info``, read when
    the question is asked) and where the question goes (the context's outlet: on the
    request, on the session, or through the task store)."""

    __slots__ = ("_info", "_outlet")

    def __init__(self, info: SessionInfo, outlet: Outlet) -> None:
        self._info = info
        self._outlet = outlet

    def _require(self, capability: str, sub: str | None = None) -> None:
        info = self._info
        declared = info.supports(capability) and (
            sub is None or isinstance(info.client_capabilities[capability].get(sub), dict))
        if declared:
            return
        what = capability if sub is None else f"{capability}.{sub}"
        version = info.protocol_version
        if version is not None and features(version).era == "modern":
            # 2026-07-28 answers the whole request with -32021 naming what was missing.
            raise MCPError(f"Missing required client capability: {what}",
                           code=MISSING_CLIENT_CAPABILITY,
                           data={"requiredCapabilities": {capability: {sub: {}} if sub else {}}})
        raise ProtocolStateError(f"the client did not declare the {what} capability")

    def elicit(self, message: str, schema: dict[str, Any] | type, *,
               timeout: float | None = None) -> ElicitResult:
        """Ask the user to fill a form (see :meth:`HandlerContext.elicit`)."""
        version = self._info.protocol_version
        if version is not None and not features(version).elicitation:
            raise ProtocolStateError(f"elicitation does not exist in {version}")
        self._require("elicitation")
        caps = self._info.client_capabilities["elicitation"]
        if caps and "form" not in caps and "url" in caps:
            raise ProtocolStateError("the client declared only URL-mode elicitation")
        requested, dataclass = elicitation_schema(schema)
        raw = self._outlet.request(
            "elicitation/create", {"message": message, "requestedSchema": requested},
            timeout=timeout)
        result = from_wire(ElicitResult, raw)
        if result.action == "accept":
            content = dict(result.content or {})
            for name, prop in requested.get("properties", {}).items():
                if name not in content and "default" in prop:
                    content[name] = prop["default"]  # SEP-1034: the default stands when omitted
            result.content = content
            if dataclass is not None:
                names = {f.name for f in dataclasses.fields(dataclass)}
                try:
                    result.data = dataclass(**{k: v for k, v in content.items() if k in names})
                except TypeError as exc:
                    raise ProtocolStateError(
                        f"the client's answer does not fit {dataclass.__name__}: {exc}") from None
        return result

    def elicit_url(self, message: str, url: str, *, elicitation_id: str | None = None,
                   timeout: float | None = None) -> ElicitResult:
        """Ask the user to open ``url`` (see :meth:`HandlerContext.elicit_url`)."""
        version = self._info.protocol_version
        if version is not None and not features(version).url_elicitation:
            raise ProtocolStateError(f"URL-mode elicitation does not exist in {version}")
        self._require("elicitation", "url")
        import secrets

        params = {"mode": "url", "message": message, "url": url,
                  "elicitationId": elicitation_id or secrets.token_urlsafe(16)}
        return from_wire(ElicitResult,
                         self._outlet.request("elicitation/create", params, timeout=timeout))

    def sample(
        self,
        messages: str | Sequence[Any],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: dict[str, Any] | None = None,
        include_context: str | None = None,
        metadata: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> CreateMessageResult:
        """Ask the client's model for a completion (see :meth:`HandlerContext.sample`)."""
        self._require("sampling")
        if tools is not None or tool_choice is not None:
            self._require("sampling", "tools")
        if include_context not in (None, "none"):
            self._require("sampling", "context")
        params: dict[str, Any] = {"messages": _messages(messages), "maxTokens": max_tokens}
        for key, value in (("systemPrompt", system_prompt), ("temperature", temperature),
                           ("stopSequences", stop_sequences),
                           ("modelPreferences", model_preferences),
                           ("includeContext", include_context), ("metadata", metadata),
                           ("tools", tools), ("toolChoice", tool_choice)):
            if value is not None:
                params[key] = value
        raw = self._outlet.request("sampling/createMessage", params, timeout=timeout)
        return from_wire(CreateMessageResult, raw)

    def list_roots(self, *, timeout: float | None = None) -> list[Root]:
        """The client's roots (see :meth:`HandlerContext.list_roots`)."""
        self._require("roots")
        raw = self._outlet.request("roots/list", None, timeout=timeout)
        roots = raw.get("roots")
        if not isinstance(roots, list):
            raise ProtocolStateError("roots/list answer has no roots list")
        return [from_wire(Root, item) for item in roots]
