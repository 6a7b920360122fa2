"""The test site (tests/django/site: a Django project with the MCP endpoint in its
URLconf) served by real servers in subprocesses: mcpsync's development server
(``manage.py mcp serve``), Django's ``runserver`` and gunicorn's gthread worker. Each
gets a fresh SQLite database, migrated and seeded (alice, who may issue refunds, and
bob; DRF tokens ``alice-token`` and ``bob-token``; password ``secret``).

Django is configured in the child processes only: this process keeps the suite's own
Django set-up (the example project) and its ``os.environ`` untouched."""

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
SITE = Path(__file__).resolve().parent / "site"


def site_env(db: Path, **extra: str) -> dict[str, str]:
    """The environment of a child process running the site against ``db``."""
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="shopsite.settings", SHOPSITE_DB=str(db),
               PYTHONPATH=os.pathsep.join([str(SITE), str(ROOT)]))
    env.update(extra)
    return env


def manage(db: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py ARGS`` in a child process; fail the test on a non-zero exit."""
    proc = subprocess.run([sys.executable, "manage.py", *args], cwd=SITE,
                          env=site_env(db, **extra), capture_output=True, text=True,
                          timeout=WAIT * 2, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


def fresh_database(directory: Path) -> Path:
    """A migrated, seeded database for the site (skips, or fails under CI, when the
    site's own dependencies are not installed)."""
    require_module("django")
    require_module("rest_framework", package="djangorestframework")
    db = directory / "shop.sqlite3"
    manage(db, "migrate", "--run-syncdb", "-v0")
    manage(db, "seed")
    return db


@pytest.fixture(scope="module")
def site_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_database(tmp_path_factory.mktemp("shopsite"))


SERVERS = {
    "mcp-serve": lambda port: [sys.executable, "manage.py", "mcp", "serve", "--port",
                               str(port)],
    "runserver": lambda port: [sys.executable, "manage.py", "runserver", "--noreload",
                               f"127.0.0.1:{port}"],
    "gunicorn": lambda port: [sys.executable, "-m", "gunicorn", "--worker-class", "gthread",
                              "--workers", "1", "--threads", "16", "--bind",
                              f"127.0.0.1:{port}", "--graceful-timeout", "5",
                              "shopsite.wsgi:application"],
}


def serve_site(kind: str, db: Path, **extra: str) -> Iterator[str]:
    port = free_port()
    with serving_process(SERVERS[kind](port), port, cwd=SITE,
                         env=site_env(db, **extra)) as base:
        yield base


@pytest.fixture(scope="module", params=["mcp-serve", "gunicorn"])
def site(request: pytest.FixtureRequest, site_db: Path) -> Iterator[str]:
    """The site's base URL, under mcpsync's development server and under gunicorn."""
    yield from serve_site(request.param, site_db)
