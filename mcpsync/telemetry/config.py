"""What a Server or Client records for OpenTelemetry: one frozen options object.

On by default, as the OpenTelemetry convention asks of instrumented libraries: nothing is
recorded until an SDK is configured (the API alone, or no API at all, costs nothing), and
``telemetry=False`` turns it off outright. Explicit providers are for tests and for hosts
that keep several pipelines; by default the global ones are used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The semantic conventions' bucket advice for every ``mcp.*.duration`` histogram (s).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0,
                    300.0)


@dataclass(frozen=True)
class Telemetry:
    """OpenTelemetry options of a :class:`~mcpsync.Server` or :class:`~mcpsync.Client`
    (``Server(telemetry=Telemetry(...))``; ``telemetry=False`` turns it off). Immutable,
    so thread-safe.

    ``tracer_provider`` / ``meter_provider``: where spans and metrics go (default: the
    global providers, read when the first message is handled, so configuring the SDK
    after building the Server is fine). ``record_arguments``: put tool arguments and
    results on spans (``gen_ai.tool.call.arguments`` / ``.result``, opt-in because they may
    hold personal data; never on metrics). ``resource_uri_in_span_name``: name
    ``resources/read`` spans after the URI (opt-in: one span name per URI is high
    cardinality). ``max_span_events``: how many progress and log notifications one span
    records as events (the rest are counted in ``mcpsync.events.dropped``).
    ``listed_names_only`` (a client): record a tool or prompt name only once the server
    listed it, else ``_OTHER``. Off by default, since a client's names are its own; a
    proxy's client turns it on, since the names it sends are its callers' (a server
    always records only the names it has registered).
    """

    enabled: bool = True
    tracer_provider: Any = None
    meter_provider: Any = None
    record_arguments: bool = False
    resource_uri_in_span_name: bool = False
    max_span_events: int = 32
    listed_names_only: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.max_span_events, int) or self.max_span_events < 0:
            raise ValueError("max_span_events must be an int >= 0")

    @classmethod
    def of(cls, value: bool | Telemetry | None) -> Telemetry:
        """``telemetry=`` as given to a Server or Client: a bool, None (default: on) or
        options."""
        if isinstance(value, Telemetry):
            return value
        if value is None or value is True:
            return _ON
        if value is False:
            return _OFF
        raise TypeError(f"telemetry must be a bool or a Telemetry, not {type(value).__name__}")


_ON = Telemetry()
_OFF = Telemetry(enabled=False)
