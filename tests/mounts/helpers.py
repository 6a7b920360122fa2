"""Load the framework examples, serve their WSGI apps on real sockets, drive them."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.interop.peers import run_official_client
from tests.serving import STOP_TIMEOUT, RunningServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DJANGO_PROJECT = EXAMPLES / "django_project"
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def load_flask_example() -> ModuleType:
    """``examples/flask_app.py`` as module ``flask_app`` (imported once per process)."""
    if "flask_app" in sys.modules:
        return sys.modules["flask_app"]
    spec = importlib.util.spec_from_file_location("flask_app", EXAMPLES / "flask_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["flask_app"] = module  # dataclasses look their module up while defined
    spec.loader.exec_module(module)
    return module


def load_django_application() -> Any:
    """The example project's ``notes_site.wsgi.application`` (Django set up once).

    What Django's set-up writes to ``os.environ`` is put back afterwards: its settings
    module and the ``TZ`` it sets from ``TIME_ZONE``. Left there, they reach every
    subprocess a later test starts (a ``celery worker`` that sees ``DJANGO_SETTINGS_MODULE``
    runs Celery's Django fix-up and fails to import ``notes_site``)."""
    if str(DJANGO_PROJECT) not in sys.path:
        sys.path.insert(0, str(DJANGO_PROJECT))
    saved = {key: os.environ.get(key) for key in ("DJANGO_SETTINGS_MODULE", "TZ")}
    os.environ["DJANGO_SETTINGS_MODULE"] = "notes_site.settings"
    try:
        from notes_site.wsgi import application  # calls django.setup(): settings load now
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        time.tzset()
    return application


class WaitressServer:
    """waitress serving ``app`` on 127.0.0.1 (an ephemeral port) in its own thread.

    waitress has no stop method; ``stop()`` has its event loop close every socket it watches
    (the listener, open connections, its wake-up pipe) from the loop's own thread, so the
    loop runs out of sockets and returns, then stops the worker threads."""

    def __init__(self, app: Any) -> None:
        import waitress

        self._server: Any = waitress.create_server(app, host="127.0.0.1", port=0, threads=16)
        self.port: int = self._server.effective_port
        self.base = f"http://127.0.0.1:{self.port}"
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcpsync-test-waitress",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._server.run()
        except OSError:
            if not self._stopping.is_set():
                raise

    def _close_all(self) -> None:  # runs on the loop thread
        for dispatcher in list(self._server._map.values()):
            dispatcher.close()

    def stop(self) -> None:
        self._stopping.set()
        self._server.trigger.pull_trigger(self._close_all)
        self._thread.join(STOP_TIMEOUT)
        self._server.task_dispatcher.shutdown()
        assert not self._thread.is_alive(), "waitress did not stop"


SERVERS: dict[str, Callable[[Any], Any]] = {"werkzeug": RunningServer,
                                            "waitress": WaitressServer}


ERAS = {"legacy": "2025-11-25", "modern": "2026-07-28"}
"""official_client.py ``--mode`` -> the protocol version it must end up with."""


def official(url: str, mode: str, *args: str) -> dict[str, Any]:
    """Run the official SDK client (mcp 2.3.0) against ``url``; check the era it got."""
    report = run_official_client(["--mode", mode, *args], url=url, env=ENV)
    assert report["transport"] == "streamable-http"
    assert report["protocolVersion"] == ERAS[mode]
    return report
