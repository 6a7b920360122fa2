"""One side's telemetry: the tracer and instruments of a Server or a Client, found lazily.

Why lazily: the OpenTelemetry convention is that a library records into whatever SDK the
application configures, and applications often configure it after building their objects
(a Flask app factory, a Django settings module). So the providers are looked up when
messages are handled: at most once a second until a real one appears, then never again
(the global providers can be set only once). Until then :meth:`inbound` and
:meth:`outbound` answer ``None`` after two attribute reads: nothing is made.

Thread-safe: the resolved tracer and instruments are published by single assignments of
immutable values; two threads resolving at once make the same objects (the SDK caches
tracers and instruments by name).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from .._version import __version__
from ..protocol.methods import VIEWS
from . import api
from .attributes import Known, Peer, describe
from .config import DURATION_BUCKETS, Telemetry
from .gauges import Gauges
from .operation import Operation
from .operation import current as current_operation

Side = Literal["server", "client"]

#: The lists whose items a ``listed_names_only`` client learns names from.
_LISTS_NAMED: Final = VIEWS.lists_named
#: The methods whose arguments ``record_arguments`` puts on spans.
_TOOL_METHODS: Final = VIEWS.tool_methods
#: The most names of one kind such a client keeps (past it, new names are ``_OTHER``).
MAX_LISTED_NAMES: Final = 4096


class ListedNames:
    """The tool and prompt names a client's server listed, bounded: what a client with
    ``listed_names_only`` records verbatim. Thread-safe (sets changed under a lock,
    read without one: a name is in or out)."""

    __slots__ = ("_lock", "_names")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: dict[str, set[str]] = {}

    def learn(self, method: str, result: Mapping[str, Any]) -> None:
        kind, key, field = _LISTS_NAMED[method]
        items = result.get(key)
        if not isinstance(items, list):
            return
        with self._lock:
            names = self._names.setdefault(kind, set())
            for item in items:
                name = item.get(field) if isinstance(item, dict) else None
                if isinstance(name, str) and len(names) < MAX_LISTED_NAMES:
                    names.add(name)

    def knows(self, kind: str, name: str) -> bool:
        names = self._names.get(kind)
        return names is not None and name in names

#: W3C Trace Context and Baggage keys, the only ``_meta`` keys read or written here
#: (unprefixed, as SEP-414 and the conventions say).
PROPAGATION_KEYS = ("traceparent", "tracestate", "baggage")
#: How often an unresolved side looks for a configured SDK again (s).
RECHECK = 1.0
SCOPE = "mcpsync"


class Instrumentation:
    """The tracer and instruments of one Server or Client (``side``). Thread-safe."""

    __slots__ = ("_config", "_context", "_duration", "_known", "_listed", "_meter",
                 "_next_check", "_propagate", "_resolved", "_sessions", "_side", "_trace",
                 "_tracer", "gauges")

    def __init__(self, config: Telemetry, side: Side, *, known: Known | None = None) -> None:
        self._config = config
        self._side = side
        #: The names a client learnt from its server's lists (``listed_names_only``).
        self._listed = ListedNames() if (
            side == "client" and config.listed_names_only and known is None) else None
        self._known = known if self._listed is None else self._listed.knows
        self._tracer: Any = None
        self._meter: Any = None
        self._duration: Any = None
        self._sessions: Any = None
        self._trace: Any = None
        self._propagate: Any = None
        self._context: Any = None
        self._resolved = not config.enabled  # disabled: resolved to nothing, for good
        #: The sources of this side's thread, session and task gauges.
        self.gauges = Gauges(side)
        self._next_check = 0.0

    @property
    def config(self) -> Telemetry:
        return self._config

    @property
    def active(self) -> bool:
        """Whether anything is recorded now (an SDK is configured and telemetry is on).
        Asked twice per request on every transport: until the API is found it costs one
        clock read, the time of the next look (:meth:`_resolve`) checked here."""
        if not self._resolved and time.monotonic() >= self._next_check:
            self._resolve()
        return self._tracer is not None or self._duration is not None

    @property
    def meter(self) -> Any:
        """The meter, once a real meter provider is configured (else ``None``)."""
        if not self._resolved:
            self._resolve()
        return self._meter

    def current_context(self) -> Any:
        """This thread's OpenTelemetry context (call only when :attr:`active`)."""
        return self._context.get_current()

    def _resolve(self) -> None:
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + RECHECK  # (racing threads may both look: harmless)
        modules = api.modules()
        if modules is None:  # not imported by the application (yet): ask again later
            return
        trace, metrics, propagate, context = modules
        self._trace, self._propagate, self._context = trace, propagate, context
        if self._tracer is None:
            provider = self._config.tracer_provider or trace.get_tracer_provider()
            if api.is_real(provider):
                self._tracer = provider.get_tracer(SCOPE, __version__)
        if self._duration is None:
            provider = self._config.meter_provider or metrics.get_meter_provider()
            if api.is_real(provider):
                meter = provider.get_meter(SCOPE, __version__)
                self._sessions = meter.create_histogram(
                    f"mcp.{self._side}.session.duration", unit="s",
                    description=f"The duration of the MCP session as observed on the "
                                f"MCP {self._side}.",
                    explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
                self._meter = meter
                self.gauges.create(meter, metrics.Observation)
                self._duration = meter.create_histogram(
                    f"mcp.{self._side}.operation.duration", unit="s",
                    description="The duration of an MCP request or notification.",
                    explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self._resolved = self._tracer is not None and self._duration is not None

    # -- operations ----------------------------------------------------------------------

    def inbound(self, method: str, params: Mapping[str, Any] | None, request_id: object, *,
                transport: Peer | None = None,
                protocol_version: str | None = None, ambient: Any = None) -> Operation | None:
        """Begin recording a request (or a notification: ``request_id`` is ``None``) that
        the peer sent, on the thread that will handle it: its span (kind SERVER) is that
        thread's current span until the operation ends, so the handler's own spans and
        outgoing calls are its children. Its parent is the ``traceparent`` in
        ``params._meta`` when that is valid, else ``ambient`` (the OpenTelemetry context
        of the thread the message arrived on, e.g. the WSGI instrumentation's request
        span), else this thread's context; when both exist, the ambient span is linked."""
        if not self.active:
            return None
        tracer = self._tracer
        described = describe(method, params, request_id, protocol_version=protocol_version,
                             transport=transport, known=self._known,
                             uri_in_name=self._config.resource_uri_in_span_name)
        span = token = None
        if tracer is not None:
            trace = self._trace
            ambient = ambient if ambient is not None else self._context.get_current()
            parent = self._extract(params)
            links = None
            if parent is None:
                parent = ambient
            else:
                ambient_span = trace.get_current_span(ambient).get_span_context()
                if ambient_span.is_valid:
                    links = [trace.Link(ambient_span)]
            if self._config.record_arguments and method in _TOOL_METHODS and params:
                arguments = params.get("arguments")
                if arguments is not None:
                    described.span_attributes["gen_ai.tool.call.arguments"] = _json(arguments)
            span = tracer.start_span(described.name, context=parent,
                                     kind=trace.SpanKind.SERVER,
                                     attributes=described.span_attributes, links=links)
            token = self._context.attach(trace.set_span_in_context(span, parent))
        return Operation(span, token, self._duration, described.metric_attributes,
                         self._config.max_span_events, _status(self._trace), self._context)

    def outbound(self, method: str, params: dict[str, Any] | None, request_id: object, *,
                 transport: Peer | None = None, protocol_version: str | None = None,
                 follows: Any = None) -> Operation | None:
        """Begin recording a request or notification this side sends; its span (kind
        CLIENT) is a child of this thread's current span, and its context is written
        into ``params["_meta"]`` (a new ``_meta`` dict: the caller's is not changed) so
        that the peer continues the trace. ``params`` must be the message's own dict.
        ``follows``: the span context of an earlier round of the same call (a 2026-07-28
        retry with input responses), whose child this one is: one trace per call."""
        if not self.active:
            return None
        tracer = self._tracer
        described = describe(method, params, request_id, protocol_version=protocol_version,
                             transport=transport, known=self._known)
        span = None
        if tracer is not None:
            trace = self._trace
            parent = None if follows is None else trace.set_span_in_context(
                trace.NonRecordingSpan(follows))
            span = tracer.start_span(described.name, context=parent,
                                     kind=trace.SpanKind.CLIENT,
                                     attributes=described.span_attributes)
            if params is not None:
                meta = params.get("_meta")
                carrier = dict(meta) if isinstance(meta, dict) else {}
                self._propagate.inject(carrier, context=trace.set_span_in_context(span))
                params["_meta"] = carrier
        operation = Operation(span, None, self._duration, described.metric_attributes,
                              self._config.max_span_events, _status(self._trace),
                              self._context)
        listed = self._listed
        if listed is not None and method in _LISTS_NAMED:
            operation.on_result = lambda result: listed.learn(method, result)
        return operation

    def traced_task(self, body: Callable[[Any], Any], tool: str,
                    task_id: str) -> Callable[[Any], Any]:
        """``body`` (a task's run, for its own thread) recorded as a span of its own
        (``tools/call {tool}``, kind INTERNAL, ``mcpsync.task.id``) linked to this
        thread's current span: the request that created the task, which has answered
        long before the task ends. Call on the creating request's thread. While the body
        runs, its span is the task thread's current operation: the progress and log
        messages the task's context sends become its events, as a request's do."""
        trace = self._trace
        tracer = self._tracer
        if tracer is None:
            return body
        origin = trace.get_current_span().get_span_context()
        links = [trace.Link(origin)] if origin.is_valid else None
        name = f"tools/call {tool}"[:300]
        max_events = self._config.max_span_events

        def run(context: Any) -> Any:
            span = tracer.start_span(name, context=self._context.Context(),
                                     kind=trace.SpanKind.INTERNAL, links=links,
                                     attributes={"mcp.method.name": "tools/call",
                                                 "gen_ai.tool.name": tool[:256],
                                                 "mcpsync.task.id": task_id})
            token = self._context.attach(trace.set_span_in_context(span))
            operation = Operation(span, token, None, {"mcp.method.name": "tools/call"},
                                  max_events, trace.StatusCode,
                                  self._context)
            recording = current_operation.set(operation)
            try:
                result = body(context)
            except BaseException as exc:
                operation.raised(exc)
                raise
            finally:
                current_operation.reset(recording)
            operation.succeeded(result if isinstance(result, Mapping) else None)
            return result

        return run

    def session_ended(self, seconds: float, *, transport: Peer | None = None,
                      protocol_version: str | None = None) -> None:
        """Record one session's (one connection's) duration,
        ``mcp.{side}.session.duration``."""
        if not self._resolved:
            self._resolve()
        if self._sessions is not None:
            described = describe("", None, None, protocol_version=protocol_version,
                                 transport=transport)
            values = described.metric_attributes
            del values["mcp.method.name"]
            self._sessions.record(seconds, values)

    def _extract(self, params: Mapping[str, Any] | None) -> Any:
        """The context carried in ``params._meta``, or ``None`` when there is none or it
        is not valid (a malformed ``traceparent`` is ignored, as W3C says)."""
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        if not isinstance(meta, Mapping) or "traceparent" not in meta:
            return None
        carrier = {key: meta[key] for key in PROPAGATION_KEYS
                   if isinstance(meta.get(key), str) and len(meta[key]) <= 8192}
        if "traceparent" not in carrier:
            return None
        context = self._propagate.extract(carrier)
        if not self._trace.get_current_span(context).get_span_context().is_valid:
            return None
        return context


def _status(trace: Any) -> Any:
    return trace.StatusCode


def _json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return "<not JSON>"
    return text if len(text) <= 4096 else text[:4096]
