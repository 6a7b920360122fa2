"""The OpenTelemetry API, taken only once the application has imported it.

``opentelemetry-api`` is an optional dependency (the ``otel`` extra), and mcpsync never
imports it first: configuring an SDK (or running under ``opentelemetry-instrument``)
imports it, so a process in which it is not imported has nothing to record, and paying
its import (about 25 ms, at a first message) would only delay that message. Once it is
imported, the global providers tell: the API's own proxies mean no SDK, nothing to record,
so no span object is ever made.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_loaded = False
_modules: tuple[ModuleType, ModuleType, ModuleType, ModuleType] | None = None


def modules() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType] | None:
    """``(trace, metrics, propagate, context)`` of the OpenTelemetry API, or ``None`` when
    the application has not imported it (yet: ask again later) or it is not installed."""
    global _loaded, _modules
    if _loaded:
        return _modules
    if "opentelemetry" not in sys.modules:
        return None
    with _lock:
        if not _loaded:
            try:
                from opentelemetry import context, metrics, propagate, trace
            except ImportError:
                _modules = None
            else:
                _modules = (trace, metrics, propagate, context)
            _loaded = True
    return _modules


def is_real(provider: Any) -> bool:
    """Whether ``provider`` is an SDK's (or any real implementation's), not one of the
    API's own proxy or no-op providers, which record nothing."""
    module = type(provider).__module__
    return not module.startswith(("opentelemetry.trace", "opentelemetry.metrics"))
