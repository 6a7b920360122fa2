"""What a :class:`~mcpsync.Client` asks its server: the typed MCP requests.

:class:`ClientSurface` is the part of ``Client`` that makes requests: ``request`` (the
escape hatch) and the typed methods on it (tools, tasks, resources, prompts, completion,
logging, ``listen``), with the defaults every call reads (``timeout``, ``input_mode``,
``max_input_rounds``). It owns the parts a request goes through, handed to it once they
are built: the connection, the :class:`~.negotiate.Negotiation` (the era and its
envelope), :class:`~.calls.Calls` (the request path), :class:`~.task_calls.ClientTasks`
and :class:`~.subscribe.Subscriptions`. ``Client`` builds those parts (and connects);
this module never imports it.

Why a base class rather than one more part the Client delegates to: these are public
methods of ``Client`` with their signatures and docstrings; a delegating copy of each on
``Client`` would double them and leave ``client.py`` over the house's 500 lines.

The params each typed method sends are built here from its Python arguments (the
functions at the end; ``tools/call``'s, :func:`~.task_calls.tool_call`, lives with the
task logic that adds to it): copies (a caller's dict is never sent, nor changed, as it
is), and optional members left out rather than sent empty or null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..codec import from_wire
from ..display.notebook import PromptList, ResourceList, ResourceTemplateList, ToolList
from ..engine.connection import Connection
from ..protocol.jsonrpc import RequestId
from ..types import (
    CallToolResult,
    Completion,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from .calls import INPUT_MODES, CallOptions, Calls, ProgressHandler, raw, typed
from .listen import Subscription, SubscriptionCallback
from .negotiate import Negotiation
from .subscribe import Subscriptions
from .task_calls import ClientTasks, tool_call
from .tasks import TaskHandle


class ClientSurface:
    """The requests one client makes, typed. Thread-safe, as its parts are."""

    def __init__(self, connection: Connection, negotiation: Negotiation, calls: Calls,
                 tasks: ClientTasks, subscriptions: Subscriptions,
                 options: CallOptions) -> None:
        self._connection = connection
        self._negotiation = negotiation
        self._calls = calls
        #: Tasks (v1 and the v2 extension): see :mod:`mcpsync.client.task_calls`.
        self._tasks = tasks
        self._subscriptions = subscriptions
        #: ``timeout``, ``input_mode`` and ``max_input_rounds``, read by every call.
        self._options = options

    # -- what every call reads -------------------------------------------------------------

    @property
    def timeout(self) -> float:
        """The default deadline (seconds) of every request; settable."""
        return self._options.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._options.timeout = value

    @property
    def input_mode(self) -> str:
        """"auto": host handlers answer MRTR questions; "manual": calls raise
        :class:`~mcpsync.client.calls.InputRequiredError` (see :mod:`mcpsync.client.calls`)."""
        return self._options.input_mode

    @input_mode.setter
    def input_mode(self, value: str) -> None:
        if value not in INPUT_MODES:
            raise ValueError(f"input_mode {value!r} is not one of {INPUT_MODES}")
        self._options.input_mode = value

    @property
    def max_input_rounds(self) -> int:
        """Bound on 2026-07-28 multi round-trip rounds for one call; settable."""
        return self._options.max_input_rounds

    @max_input_rounds.setter
    def max_input_rounds(self, value: int) -> None:
        self._options.max_input_rounds = value

    @property
    def task_surface(self) -> str | None:
        """The task surface the server offers: ``"v2"`` (the extension), ``"v1"``
        (2025-11-25) or None (no tasks). See :mod:`mcpsync.client.tasks`."""
        return self._tasks.surface

    # -- requests ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressHandler | str | None = None,
        input_mode: str | None = None,
        cache: bool = True,
    ) -> dict[str, Any]:
        """Send any request and return the raw result dict (the escape hatch).

        Under 2026-07-28 the per-request envelope is added to ``params._meta``, a fresh
        cached result is returned without asking (``cache=False`` always asks), and
        ``input_required`` results are followed (``input_mode``, default the client's).
        """
        result: dict[str, Any] = self._calls.send(method, params, timeout, on_progress,
                                                  input_mode, cache, raw)
        return result

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send any notification."""
        self._connection.notify(method, params)

    def cancel_request(self, request_id: RequestId, reason: str) -> bool:
        """Cancel a request this client sent, by its JSON-RPC id (as a send middleware sees
        it): its caller raises :class:`~mcpsync.errors.RequestCancelledError` and the
        server is sent ``notifications/cancelled``. False when it was no longer waiting."""
        return self._connection.cancel_request(request_id, reason)

    def ping(self, *, timeout: float | None = None) -> None:
        """Check the server answers; raises on timeout or error.

        2026-07-28 has no ``ping``: ``server/discover`` serves as the liveness check.
        """
        modern = self._negotiation.envelope is not None
        self.request("server/discover" if modern else "ping", timeout=timeout, cache=False)

    def list_tools(self, *, timeout: float | None = None) -> list[Tool]:
        """Every tool the server offers (all pages), as a
        :class:`~mcpsync.display.notebook.ToolList`: a list a notebook shows as a table."""
        items = self._calls.all_pages("tools/list", "tools", timeout)
        self._tasks.support.learn(items)
        return ToolList(from_wire(Tool, item) for item in items)

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressHandler | str | None = None,
        meta: dict[str, Any] | None = None,
        input_mode: str | None = None,
    ) -> CallToolResult:
        """Call a tool and return its result.

        A tool that failed is a result with ``is_error`` true (its text says why), not an
        exception; protocol failures (unknown tool, bad params) raise
        :class:`~mcpsync.errors.MCPError`. ``on_progress`` receives
        :class:`~mcpsync.types.Progress` updates, all of them before this returns;
        ``on_progress="bar"`` draws them as a progress bar (tqdm when installed, else a text
        bar on stderr; see :func:`mcpsync.display.notebook.progress_bar`).

        A call the server runs as a task (v2: the server decides; v1: the tool requires it)
        is followed to its end: polled, its questions answered by the client's handlers,
        its result returned. ``timeout`` then bounds the whole wait; when it passes (or on
        Ctrl-C) the task is cancelled on the server before the exception propagates.
        """
        params = tool_call(name, arguments, meta)
        convert = self._tasks.converter(self._tasks.prepare_call(name, params), timeout)
        result: CallToolResult = self._calls.send("tools/call", params, timeout, on_progress,
                                                  input_mode, True, convert)
        return result

    def start_task(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                   ttl: float | None = None, timeout: float | None = None,
                   meta: dict[str, Any] | None = None) -> TaskHandle:
        """Start a tool as a task and return at once with its :class:`TaskHandle`.

        ``ttl`` (seconds) asks a v1 server to keep the task that long (v2 servers choose).
        See :mod:`mcpsync.client.tasks`; raises
        :class:`~mcpsync.errors.ProtocolStateError` when the server offers no tasks.
        """
        params = self._tasks.start_params(name, arguments, ttl, meta)
        answer = self._calls.send("tools/call", params, timeout, None, None, False, raw)
        return self._tasks.started(answer)

    def task(self, task_id: str, *, timeout: float | None = None) -> TaskHandle:
        """Re-attach to a task by id (made by this or any other client of the server,
        e.g. before a notebook kernel restarted). Raises the server's error (-32602) when
        the task is unknown, expired or not visible to this client."""
        return self._tasks.attach(task_id, timeout)

    def list_resources(self, *, timeout: float | None = None) -> list[Resource]:
        """Every resource with a fixed URI (all pages): a list a notebook shows as a
        table (:class:`~mcpsync.display.notebook.ResourceList`)."""
        return ResourceList(from_wire(Resource, item) for item in
                            self._calls.all_pages("resources/list", "resources", timeout))

    def list_resource_templates(self, *, timeout: float | None = None) -> list[ResourceTemplate]:
        """Every resource template (all pages): a list a notebook shows as a table."""
        return ResourceTemplateList(
            from_wire(ResourceTemplate, item) for item in
            self._calls.all_pages("resources/templates/list", "resourceTemplates", timeout))

    def read_resource(self, uri: str, *, timeout: float | None = None,
                      input_mode: str | None = None) -> ReadResourceResult:
        """Read a resource; a missing one raises :class:`~mcpsync.errors.ResourceNotFoundError`
        (in either era: see docs/client.md, "Errors")."""
        result: ReadResourceResult = self._calls.send(
            "resources/read", {"uri": uri}, timeout, None, input_mode, True,
            typed(ReadResourceResult))
        return result

    def subscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see ``on_notification``)."""
        self.request("resources/subscribe", {"uri": uri}, timeout=timeout)

    def unsubscribe(self, uri: str, *, timeout: float | None = None) -> None:
        self.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]:
        """Every prompt (all pages): a list a notebook shows as a table."""
        return PromptList(from_wire(Prompt, item)
                          for item in self._calls.all_pages("prompts/list", "prompts", timeout))

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *,
        timeout: float | None = None, input_mode: str | None = None,
    ) -> GetPromptResult:
        """Render a prompt with ``arguments`` (strings)."""
        result: GetPromptResult = self._calls.send(
            "prompts/get", _prompt_get_params(name, arguments), timeout, None, input_mode,
            True, typed(GetPromptResult))
        return result

    def complete(
        self,
        ref: str,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Suggestions for a prompt argument (``ref`` = prompt name) or a template variable
        (``ref`` = the URI template)."""
        result = self.request("completion/complete",
                              _completion_params(ref, argument, value, context), timeout=timeout)
        return from_wire(Completion, result.get("completion") or {})

    @property
    def log_level(self) -> str | None:
        """The least severe log message the server is asked for (None: the server's
        default in the handshake era, no logs at all in 2026-07-28)."""
        return self._negotiation.log_level

    def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask the server to send only log messages at ``level`` or above.

        Handshake era: ``logging/setLevel`` (the server's answer, or error, is raised).
        2026-07-28 has no such method: ``level`` becomes the ``logLevel`` of every request
        sent from now on (no request is made; ``timeout`` is unused).
        """
        self._negotiation.set_logging_level(level, timeout)

    # -- subscriptions -------------------------------------------------------------------

    def listen(
        self,
        *,
        tools: bool = True,
        prompts: bool = True,
        resources: bool = True,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
        on_notification: SubscriptionCallback | None = None,
        timeout: float | None = None,
    ) -> Subscription:
        """Subscribe to list changes and resource updates; returns once acknowledged.

        Under 2026-07-28 this opens a ``subscriptions/listen`` request that stays open
        until :meth:`Subscription.close`. In the handshake era it follows the session's
        list_changed notifications and ``resources/subscribe`` for ``resource_uris``.
        Iterate the subscription, or pass ``on_notification(note)`` to have every
        notification handed to it on the subscription's own thread. ``acknowledged``
        says what the server agreed to send. ``task_ids`` asks for the status changes
        (``notifications/tasks``) of those tasks (the tasks extension, 2026-07-28 only;
        see :meth:`TaskHandle.subscribe <mcpsync.client.tasks.TaskHandle.subscribe>`).
        """
        wanted = _listen_params(tools, prompts, resources, resource_uris, task_ids)
        wait = self.timeout if timeout is None else timeout
        return self._subscriptions.open(wanted, on_notification, wait)


def _prompt_get_params(name: str, arguments: Mapping[str, str] | None) -> dict[str, Any]:
    """``prompts/get``: ``arguments`` only when there are some."""
    params: dict[str, Any] = {"name": name}
    if arguments:
        params["arguments"] = dict(arguments)
    return params


def _completion_params(ref: str, argument: str, value: str,
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


def _listen_params(tools: bool, prompts: bool, resources: bool, resource_uris: Sequence[str],
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
