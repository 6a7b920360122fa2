"""The OpenTelemetry API, imported once and only when first needed.

``opentelemetry-api`` is an optional dependency (the ``otel`` extra): importing mcpsync
never imports it, and without it every question here answers "nothing to record". With it
installed but no SDK configured, the global providers are the API's proxies: that too
answers "nothing to record", so no span object is ever made.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_loaded = False
_modules: tuple[ModuleType, ModuleType, ModuleType, ModuleType] | None = None


def modules() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType] | None:
    """``(trace, metrics, propagate, context)`` of the OpenTelemetry API, or ``None`` when
    it is not installed. The import is tried once per process."""
    global _loaded, _modules
    if _loaded:
        return _modules
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
