"""docs/observability.md's ``gunicorn.conf.py`` (issue 41: the page said to configure the
SDK in gunicorn's ``post_fork`` but showed no such file): the block from the page, run by
a real gunicorn with ``--preload`` (the app imported in the master before the fork), a
``telemetry.py`` whose exporter stands in for the collector, and real calls: every worker
sends its own spans."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from mcpsync import Client
from tests.helpers import WAIT, require_module, wait_until
from tests.serving import free_port, wait_for_port

require_module("gunicorn")
require_module("opentelemetry.sdk")

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "observability.md").read_text(encoding="utf-8")

TELEMETRY = textwrap.dedent("""\
    import json
    import os

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (BatchSpanProcessor, SpanExporter,
                                                SpanExportResult)


    class FileExporter(SpanExporter):
        def export(self, spans):
            with open(os.environ["SPANS_FILE"], "a") as out:
                for span in spans:
                    out.write(json.dumps({"name": span.name, "pid": os.getpid()}) + "\\n")
            return SpanExportResult.SUCCESS


    def configure():
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(FileExporter(),
                                                       schedule_delay_millis=100))
        trace.set_tracer_provider(provider)
""")

APP = textwrap.dedent("""\
    from mcpsync import Server

    server = Server("traced", request_state_key="k")


    @server.tool()
    def ping() -> str:
        return "pong"


    app = server.wsgi_app(path="/mcp")
""")


def test_the_page_s_gunicorn_conf_configures_the_sdk_in_every_worker(tmp_path):
    found = re.search(r"<!-- example: gunicorn-conf -->\s*```python\n(.*?)```", PAGE, re.S)
    assert found, "docs/observability.md has no gunicorn.conf.py example"
    (tmp_path / "gunicorn.conf.py").write_text(found.group(1))
    (tmp_path / "telemetry.py").write_text(TELEMETRY)
    (tmp_path / "app.py").write_text(APP)
    spans = tmp_path / "spans.jsonl"
    port = free_port()
    env = dict(os.environ, SPANS_FILE=str(spans),
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    # The page's file as it is; only the size is the test's (two workers, not four).
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--preload", "--workers", "2", "--bind",
         f"127.0.0.1:{port}", "app:app"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc=proc)
        for _ in range(6):
            with Client.http(f"http://127.0.0.1:{port}/mcp", protocol_version="2026-07-28",
                             timeout=WAIT, telemetry=False) as client:
                assert client.call_tool("ping", {}).text == "pong"

        def recorded() -> list[dict[str, object]]:
            if not spans.exists():
                return []
            return [json.loads(line) for line in spans.read_text().splitlines()]

        wait_until(lambda: sum(r["name"] == "tools/call ping" for r in recorded()) == 6,
                   timeout=WAIT, message=lambda: str(recorded()))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            # Seen once in a full parallel run (not reproduced since): say what gunicorn
            # said while it did not stop, rather than only that it did not.
            proc.kill()
            _, err = proc.communicate(timeout=WAIT)
            raise AssertionError(f"gunicorn did not stop within {WAIT} s of SIGTERM; "
                                 f"its stderr:\n{err}") from None
    assert "Traceback" not in err, err
    pids = {r["pid"] for r in recorded()}
    assert proc.pid not in pids  # sent by the workers, configured after the fork
    assert pids
