"""An OpenTelemetry SDK of each test's own: in-memory span exporter and metric reader,
handed to mcpsync through ``Telemetry(tracer_provider=, meter_provider=)`` (the global
providers can be set only once per process, so tests do not use them)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.helpers import require_module

sdk_trace = require_module("opentelemetry.sdk.trace")
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from mcpsync.telemetry import Telemetry  # noqa: E402


@dataclass
class Sdk:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    telemetry: Telemetry

    def finished(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def points(self, name: str) -> list[Any]:
        """The data points of metric ``name`` collected so far."""
        data = self.metrics.get_metrics_data()
        found = []
        for resource in (data.resource_metrics if data else []):
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found


@pytest.fixture
def sdk() -> Iterator[Sdk]:
    spans = InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Sdk(spans, reader, Telemetry(tracer_provider=tracer_provider,
                                       meter_provider=meter_provider))
    tracer_provider.shutdown()
    meter_provider.shutdown()
