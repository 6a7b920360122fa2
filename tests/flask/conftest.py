"""The test Flask app (tests/flask/app/shop_app.py: Flask-Login, Flask-SQLAlchemy, the MCP
endpoint through mcpsync.flask.MCP) served by real servers in subprocesses: mcpsync's
development server (``flask mcp serve``) and gunicorn's gthread worker, each on a fresh
SQLite database (``flask seed``: alice and bob, tokens alice-token and bob-token)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import WAIT, require_module
from tests.serving import free_port, serving_process

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).resolve().parent / "app"


def app_env(db: Path) -> dict[str, str]:
    return dict(os.environ, SHOP_DB=str(db), FLASK_APP="shop_app",
                PYTHONPATH=os.pathsep.join([str(APP), str(ROOT)]))


def flask(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``flask ARGS`` for the app, in a child process; fails the test on an error."""
    proc = subprocess.run([sys.executable, "-m", "flask", *args], cwd=APP, env=app_env(db),
                          capture_output=True, text=True, timeout=WAIT * 2, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for module, package in (("flask_login", "flask-login"),
                            ("flask_sqlalchemy", "flask-sqlalchemy"),
                            ("flask_wtf", "flask-wtf")):
        require_module(module, package=package)
    db = tmp_path_factory.mktemp("flaskshop") / "shop.sqlite3"
    flask(db, "seed")
    return db


SERVERS = {
    "flask-mcp-serve": lambda port: [sys.executable, "-m", "flask", "mcp", "serve",
                                     "--port", str(port)],
    "gunicorn": lambda port: [sys.executable, "-m", "gunicorn", "--worker-class", "gthread",
                              "--workers", "1", "--threads", "16", "--bind",
                              f"127.0.0.1:{port}", "--graceful-timeout", "5",
                              "shop_app:app"],
}


@pytest.fixture(scope="module", params=sorted(SERVERS))
def flask_site(request: pytest.FixtureRequest, app_db: Path) -> Iterator[str]:
    port = free_port()
    with serving_process(SERVERS[request.param](port), port, cwd=APP,
                         env=app_env(app_db)) as base:
        yield base
