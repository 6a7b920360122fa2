"""The params of the requests :class:`~mcpsync.Client`'s typed methods send, built from
their Python arguments: copies (a caller's dict is never sent, nor changed, as it is), and
optional members left out rather than sent empty or null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def tool_call(name: str, arguments: Mapping[str, Any] | None,
              meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """``tools/call``: ``arguments`` when given (even empty), ``_meta`` when not empty."""
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = dict(arguments)
    if meta:
        params["_meta"] = dict(meta)
    return params


def prompt_get(name: str, arguments: Mapping[str, str] | None) -> dict[str, Any]:
    """``prompts/get``: ``arguments`` only when there are some."""
    params: dict[str, Any] = {"name": name}
    if arguments:
        params["arguments"] = dict(arguments)
    return params


def completion(ref: str, argument: str, value: str,
               context: Mapping[str, str] | None) -> dict[str, Any]:
    """``completion/complete``: ``ref`` is a URI template (a template variable is being
    completed) or else a prompt's name."""
    from ..protocol.uritemplate import is_template

    reference = ({"type": "ref/resource", "uri": ref} if is_template(ref)
                 else {"type": "ref/prompt", "name": ref})
    params: dict[str, Any] = {"ref": reference,
                              "argument": {"name": argument, "value": value}}
    if context:
        params["context"] = {"arguments": dict(context)}
    return params


def listen(tools: bool, prompts: bool, resources: bool, resource_uris: Sequence[str],
           task_ids: Sequence[str]) -> dict[str, Any]:
    """What a ``listen`` asks for (``subscriptions/listen``'s params; the handshake era
    reads the same): the list changes wanted, and each URI and task id once."""
    wanted: dict[str, Any] = {field: True for field, on in (
        ("toolsListChanged", tools), ("promptsListChanged", prompts),
        ("resourcesListChanged", resources)) if on}
    if resource_uris:
        wanted["resourceSubscriptions"] = list(dict.fromkeys(resource_uris))
    if task_ids:
        wanted["taskIds"] = list(dict.fromkeys(task_ids))
    return wanted
