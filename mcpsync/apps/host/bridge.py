"""The host's side of the view <-> host protocol (SEP-1865 "Communication Protocol"),
independent of how messages travel: the preview page carries them over HTTP from the
browser, the notebook widget over its comm. Both hand each message the view posted to
:meth:`Bridge.handle` and post back what it returns, so a view behaves the same in both.

What it answers: ``ui/initialize`` (host info, capabilities, context), ``ping``,
``tools/call`` and ``resources/read`` forwarded to the server through the sync
:class:`~mcpsync.Client` (a view may call only the tools whose visibility includes
``"app"``: the others are refused as the revision requires), ``ui/request-display-mode``
(inline only), ``ui/update-model-context`` (kept, bounded), ``notifications/message``
(logged). ``ui/notifications/initialized`` is answered with the tool input; the tool's
result is delivered by :meth:`Bridge.tool_result`, which runs the call once.

Thread-safe: a page may post several messages at once; the call runs once under a
lock-free once-guard (a Future), never holding a lock while the server is asked.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Final

from ..._version import __version__
from ...codec import to_wire
from ...errors import MCPError, MCPSyncError, RequestCancelledError
from ..wire import UI_PROTOCOL_VERSION, app_visible
from .csp import declared

if TYPE_CHECKING:
    from ...client.client import Client
    from ...types import Tool
    from .view import View

logger = logging.getLogger("mcpsync.apps")

INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
#: The revision's "implementation-defined" code for a host that declines.
DECLINED: Final = -32000
#: The most bytes of model context a view may leave with the host.
MAX_MODEL_CONTEXT_BYTES: Final = 64 * 1024


class Bridge:
    """One shown view of one tool call: answers what the view sends."""

    def __init__(self, client: Client, tool: Tool, arguments: Mapping[str, Any], view: View,
                 *, tools: list[Tool] | None = None, timeout: float | None = None,
                 platform: str = "web") -> None:
        self.client = client
        self.tool = tool
        self.arguments = dict(arguments)
        self.view = view
        self.timeout = timeout
        self.platform = platform
        listed = tools if tools is not None else client.list_tools(timeout=timeout)
        #: The tools this view may call: the server's tools visible to apps.
        self.app_tools: frozenset[str] = frozenset(t.name for t in listed if app_visible(t))
        self.initialized = threading.Event()
        #: The last ``ui/update-model-context`` the view sent (None: none).
        self.model_context: dict[str, Any] | None = None
        self._result: Future[dict[str, Any]] | None = None
        self._once = threading.Lock()

    # -- host -> view ---------------------------------------------------------------------

    def tool_input(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": "ui/notifications/tool-input",
                "params": {"arguments": self.arguments}}

    def tool_result(self) -> dict[str, Any]:
        """``ui/notifications/tool-result`` of the tool call, run once however many times
        this is asked. A call the server refused is a result with ``isError`` and the
        error's message, so the view shows it as it would a tool's own failure; a call
        given up on (its deadline passed) is ``ui/notifications/tool-cancelled`` with
        the reason, as the revision requires for a cancelled execution."""
        with self._once:
            future = self._result
            mine = future is None
            if future is None:
                future = self._result = Future()
        if mine:
            try:
                result = {"jsonrpc": "2.0", "method": "ui/notifications/tool-result",
                          "params": to_wire(self.client.call_tool(
                              self.tool.name, self.arguments, timeout=self.timeout))}
            except RequestCancelledError as exc:  # given up on (its deadline): cancelled
                result = {"jsonrpc": "2.0", "method": "ui/notifications/tool-cancelled",
                          "params": {"reason": str(exc)}}
            except MCPSyncError as exc:  # refused by the server, connection lost
                text = exc.message if isinstance(exc, MCPError) else str(exc)
                result = {"jsonrpc": "2.0", "method": "ui/notifications/tool-result",
                          "params": {"content": [{"type": "text", "text": text}],
                                     "isError": True}}
            except BaseException as exc:
                future.set_exception(exc)
                raise
            future.set_result(result)
        return future.result()

    @staticmethod
    def teardown_request(request_id: str | int, reason: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": "ui/resource-teardown",
                "params": {"reason": reason}}

    # -- view -> host ---------------------------------------------------------------------

    def handle(self, message: Any) -> list[dict[str, Any]]:
        """The messages to post to the view in answer to ``message`` (what it posted)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return []
        method = message.get("method")
        has_id = "id" in message and isinstance(message["id"], (str, int))
        if not isinstance(method, str):
            return []  # a response (to a teardown) or junk: the page handles responses
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if not has_id:
            self._notified(method, params)
            return [self.tool_input()] if method == "ui/notifications/initialized" else []
        request_id = message["id"]
        try:
            result = self._request(method, params)
        except MCPError as exc:
            return [{"jsonrpc": "2.0", "id": request_id, "error": exc.to_wire()}]
        except MCPSyncError as exc:  # a timeout, a lost connection: the view is told why
            return [{"jsonrpc": "2.0", "id": request_id,
                     "error": {"code": INTERNAL_ERROR, "message": str(exc)}}]
        return [{"jsonrpc": "2.0", "id": request_id, "result": result}]

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "ui/notifications/initialized":
            self.initialized.set()
        elif method == "notifications/message":
            logger.info("view %s: %s", self.view.uri, json.dumps(params.get("data"))[:2000])

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "ui/initialize":
            return self._initialize_result()
        if method == "ping":
            return {}
        if method == "tools/call":
            return self._call(params)
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise MCPError("resources/read needs a uri", code=INVALID_PARAMS)
            logger.info("view %s reads %s", self.view.uri, uri)
            result: dict[str, Any] = to_wire(self.client.read_resource(uri, timeout=self.timeout))
            return result
        if method == "ui/request-display-mode":
            return {"mode": "inline"}
        if method == "ui/update-model-context":
            if len(json.dumps(params)) > MAX_MODEL_CONTEXT_BYTES:
                raise MCPError(f"a model context is at most {MAX_MODEL_CONTEXT_BYTES} bytes",
                               code=INVALID_PARAMS)
            self.model_context = params
            return {}
        if method in ("ui/message", "ui/open-link"):
            raise MCPError(f"this host does not take {method} (it has no conversation and "
                           "opens no links)", code=DECLINED)
        raise MCPError(f"method {method!r} is not available to a view", code=METHOD_NOT_FOUND)

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
            raise MCPError("tools/call needs a name and an arguments object",
                           code=INVALID_PARAMS)
        if name not in self.app_tools:
            logger.warning("view %s called %r, which is not visible to apps: refused",
                           self.view.uri, name)
            raise MCPError(f"tool {name!r} is not available to this view", code=INVALID_PARAMS)
        logger.info("view %s calls %s", self.view.uri, name)
        result: dict[str, Any] = to_wire(self.client.call_tool(name, arguments or {},
                                                               timeout=self.timeout))
        return result

    def _initialize_result(self) -> dict[str, Any]:
        sandbox: dict[str, Any] = {"csp": {k: v for k, v in declared(self.view.csp).items()
                                           if v}}
        if self.view.permissions:
            sandbox["permissions"] = dict(self.view.permissions)
        return {
            "protocolVersion": UI_PROTOCOL_VERSION,
            "hostInfo": {"name": "mcpsync", "version": __version__},
            "hostCapabilities": {"serverTools": {}, "serverResources": {}, "logging": {},
                                 "sandbox": sandbox},
            "hostContext": {"toolInfo": {"tool": to_wire(self.tool)}, "theme": "light",
                            "displayMode": "inline", "availableDisplayModes": ["inline"],
                            "platform": self.platform},
        }


__all__ = ["MAX_MODEL_CONTEXT_BYTES", "Bridge"]
