"""Serve one of docs/observability.md's framework examples with an SDK configured, call its
asking tool, and check the trace: ``python -m tests.telemetry.framework_trace flask|django
VERSION`` exits 0 and prints ``ok`` when the trace is as the page says.

A process of its own (``test_frameworks.py`` runs it): the WSGI middleware records into the
*global* tracer provider, which can be set once per process, and Django's settings are
process-wide too. The example's code is taken from the page itself, so the page cannot
drift from what is tested.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from mcpsync import Client, HostHandlers
from mcpsync.types import ElicitResult
from tests.helpers import WAIT, wait_until
from tests.serving import RunningServer

ROOT = Path(__file__).resolve().parents[2]
WSGI_SCOPE = "opentelemetry.instrumentation.wsgi"

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # as the application does, before it serves


def block(name: str) -> str:
    """The ```python block after ``<!-- example: NAME -->`` in docs/observability.md."""
    page = (ROOT / "docs" / "observability.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- example: {name} -->\s*```python\n(.*?)```", page, re.S)
    assert found, f"docs/observability.md has no example {name!r}"
    return found.group(1)


def load(kind: str) -> tuple[Any, Any, str, dict[str, Any], dict[str, Any]]:
    """(WSGI app, the MCP endpoint, tool, its arguments, the user's answer) of the
    example, run as the module it would be in an application."""
    if kind == "flask":
        module = types.ModuleType("traced_flask_app")
    else:
        sys.path.insert(0, str(ROOT / "examples" / "django_project"))
        __import__("notes_site")
        module = types.ModuleType("notes_site.traced_wsgi")
        module.__package__ = "notes_site"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    code = compile(block(f"otel-{kind}"), f"docs/observability.md:otel-{kind}", "exec")
    exec(code, module.__dict__)  # the page's own example, run as its module
    if kind == "flask":
        wsgi = module.app.wsgi_app
        return module.app, wsgi.wsgi.mounts["/mcp"], "delete_note", {"title": "t"}, \
            {"sure": True}
    wsgi = module.application
    return wsgi, wsgi.wsgi.mounts["/mcp"], "rate_book", {"title": "Dune"}, {"stars": 4}


def main(kind: str, version: str) -> None:
    app, endpoint, tool, arguments, answer = load(kind)
    with RunningServer(app, on_stop=endpoint.close) as running, Client.http(
            running.base + "/mcp", protocol_version=version, telemetry=False,
            host=HostHandlers(elicitation=lambda _: ElicitResult(action="accept", content=answer)),
            timeout=WAIT) as client:
        result = client.call_tool(tool, arguments)
        assert not result.is_error, result.text
        assert result.text in ("deleted", "Dune: 4 stars"), result.text

    def spans() -> tuple[list[Any], list[Any]]:
        finished = exporter.get_finished_spans()
        http = [s for s in finished if s.instrumentation_scope.name == WSGI_SCOPE]
        served = [s for s in finished if s.name == f"tools/call {tool}"]
        return http, served

    def parented() -> bool:  # a WSGI span ends when its body is closed, maybe after
        http, served = spans()
        ids = {s.context.span_id for s in http}
        return bool(served) and all(s.parent is not None and s.parent.span_id in ids
                                    for s in served)

    wait_until(parented, timeout=WAIT, message=lambda: f"not parented by a WSGI span: "
               f"{[(s.name, s.parent) for s in spans()[1]]}")
    http, served = spans()
    assert all(s.kind is SpanKind.SERVER for s in http + served)
    finished = exporter.get_finished_spans()
    if version == "2026-07-28":
        # asked, then answered: two rounds of the call, each in its own HTTP request
        assert len(served) == 2, [s.name for s in finished]
        assert len({s.parent.span_id for s in served}) == 2
        assert served[1].attributes["mcp.protocol.version"] == "2026-07-28"
    else:
        (serving,) = served
        (question,) = [s for s in finished if s.name == "elicitation/create"]
        assert question.kind is SpanKind.CLIENT
        assert question.parent.span_id == serving.context.span_id
        assert question.context.trace_id == serving.context.trace_id
        assert serving.attributes["mcp.session.id"]
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
