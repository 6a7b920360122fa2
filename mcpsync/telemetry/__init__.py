"""OpenTelemetry traces and metrics, per the MCP semantic conventions (the ``otel``
extra). See docs/observability.md."""

from .config import Telemetry
from .instrumentation import Instrumentation
from .operation import Operation

__all__ = ["Instrumentation", "Operation", "Telemetry"]
