"""What ``mcpsync resources``, ``read``, ``prompts``, ``prompt`` and ``inspect`` print.

Plain text for a person, or (``--json``) the wire's shape for scripts. Everything here
came from the server, so every string passes :func:`~mcpsync.cli.output.safe` (control
characters made visible) and long texts are cut as in :mod:`mcpsync.display.text`.

A kind the server does not offer is ``None`` (JSON ``null``); one it offers with nothing in
it is an empty list: "not offered" and "none" read differently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..codec import to_wire
from ..display.text import cut
from .output import block_text, contents_text, safe, tools_text


@dataclass
class Surface:
    """Everything a server offers, as ``inspect`` found it (``None``: not offered).
    Built and read by one thread."""

    server_info: Any
    protocol_version: str
    era: str
    capabilities: dict[str, Any]
    instructions: str | None
    tools: list[Any] | None
    resources: list[Any] | None
    templates: list[Any] | None
    prompts: list[Any] | None


def _wire(items: list[Any] | None) -> list[Any] | None:
    return None if items is None else [to_wire(item) for item in items]


def dump(value: Any) -> str:
    """A wire value as indented JSON."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def resources_json(resources: list[Any] | None, templates: list[Any] | None) -> str:
    return dump({"resources": _wire(resources), "resourceTemplates": _wire(templates)})


def surface_json(surface: Surface) -> str:
    return dump({
        "serverInfo": to_wire(surface.server_info),
        "protocolVersion": surface.protocol_version,
        "era": surface.era,
        "capabilities": surface.capabilities,
        "instructions": surface.instructions,
        "tools": _wire(surface.tools),
        "resources": _wire(surface.resources),
        "resourceTemplates": _wire(surface.templates),
        "prompts": _wire(surface.prompts),
    })


def _described(head: str, what: Any) -> list[str]:
    """``head``, then the description (or title) indented below it."""
    lines = [head]
    text = getattr(what, "description", None) or getattr(what, "title", None)
    if text:
        lines.extend("    " + safe(line) for line in cut(str(text)).splitlines())
    return lines


def _mime(mime: object) -> str:
    return f" ({safe(mime)})" if mime else ""


def resources_text(resources: list[Any] | None, templates: list[Any] | None) -> str:
    """``uri  name (mime)`` for each resource, then each template, with descriptions."""
    return "\n".join(_section("resources", resources, _resource_lines) +
                     _section("resource templates", templates, _template_lines))


def _resource_lines(resource: Any) -> list[str]:
    return _described(f"{safe(resource.uri)}  {safe(resource.name)}{_mime(resource.mime_type)}",
                      resource)


def _template_lines(template: Any) -> list[str]:
    return _described(f"{safe(template.uri_template)}  {safe(template.name)}"
                      f"{_mime(template.mime_type)}", template)


def _section(title: str, items: list[Any] | None, lines: Any) -> list[str]:
    if items is None:
        return [f"{title}: not offered"]
    if not items:
        return [f"{title}: none"]
    out = [f"{title} ({len(items)}):"]
    for item in items:
        out.extend("  " + line for line in lines(item))
    return out


def prompts_text(prompts: Iterable[Any]) -> str:
    """``name(arg*, arg)`` (``*``: required) and the description, then each argument's
    description."""
    return "\n".join(line for prompt in prompts for line in _prompt_lines(prompt))


def _prompt_lines(prompt: Any) -> list[str]:
    arguments = prompt.arguments or []
    names = ", ".join(f"{a.name}{'*' if a.required else ''}" for a in arguments)
    lines = _described(f"{safe(prompt.name)}({safe(names)})", prompt)
    for argument in arguments:
        text = argument.description or argument.title
        if text:
            star = "*" if argument.required else ""
            lines.append(f"    {safe(argument.name)}{star}: "
                         f"{safe(' '.join(cut(str(text)).split()))}")
    return lines


def messages_text(result: Any) -> str:
    """A rendered prompt: ``role: content`` for each message."""
    return "\n".join(f"{safe(m.role)}: {block_text(m.content)}" for m in result.messages)


def read_text(result: Any) -> str:
    """A read resource: one part's text as is; several parts each under its URI."""
    contents = result.contents
    if len(contents) == 1:
        return contents_text(contents[0])
    return "\n".join(f"--- {safe(getattr(c, 'uri', ''))}{_mime(getattr(c, 'mime_type', None))}"
                     f"\n{contents_text(c)}" for c in contents)


def surface_text(surface: Surface) -> str:
    """The whole surface of a server, for a person."""
    info = surface.server_info
    title = f" ({safe(info.title)})" if info.title else ""
    era = "stateless" if surface.era == "modern" else "handshake"
    lines = [f"server: {safe(info.name)} {safe(info.version)}{title}",
             f"protocol: {safe(surface.protocol_version)} ({era} era)",
             f"capabilities: {_capabilities(surface.capabilities)}"]
    if surface.instructions:
        lines.append("instructions:")
        lines.extend("    " + safe(line) for line in cut(surface.instructions).splitlines())
    if surface.tools is None:
        lines.append("tools: not offered")
    elif not surface.tools:
        lines.append("tools: none")
    else:
        lines.append(f"tools ({len(surface.tools)}):")
        lines.extend("  " + line for line in tools_text(surface.tools).splitlines())
    lines.append(resources_text(surface.resources, surface.templates))
    if surface.prompts is None:
        lines.append("prompts: not offered")
    elif not surface.prompts:
        lines.append("prompts: none")
    else:
        lines.append(f"prompts ({len(surface.prompts)}):")
        lines.extend("  " + line for line in prompts_text(surface.prompts).splitlines())
    return "\n".join(lines)


def _capabilities(capabilities: dict[str, Any]) -> str:
    """``tools (listChanged), resources (subscribe, listChanged), logging``."""
    if not capabilities:
        return "none"
    parts = []
    for name, value in capabilities.items():
        flags = [k for k, v in value.items() if v is True] if isinstance(value, dict) else []
        parts.append(f"{name} ({', '.join(flags)})" if flags else name)
    return safe(", ".join(parts))
