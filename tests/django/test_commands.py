"""``manage.py mcp stdio --user alice`` driven by a real stdio client, ``manage.py mcp
inspect``, autodiscovery of the shop app's ``mcp.py``, ``manage.py check``'s warnings,
and a retiring handler thread's database connection closed with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcpsync import Client
from tests.helpers import WAIT

from .conftest import SITE, fresh_database, manage, site_env


def test_manage_py_mcp_stdio_acts_as_the_user(site_db: Path):
    command = [sys.executable, "manage.py", "mcp", "stdio", "--user", "alice"]
    with Client.stdio(command, cwd=SITE, env=site_env(site_db), timeout=WAIT) as client:
        assert client.call_tool("whoami").text == "alice (no header)"
        assert "refund" in {t.name for t in client.list_tools()}  # alice's permission
        assert client.call_tool("add_order", {"item": "stdio"}).structured_content["result"]
        assert client.call_tool("count_orders").structured_content["result"] >= 1
    command[-1] = "bob"
    with Client.stdio(command, cwd=SITE, env=site_env(site_db), timeout=WAIT) as client:
        assert client.call_tool("whoami").text == "bob (no header)"
        assert "refund" not in {t.name for t in client.list_tools()}


def test_an_unknown_user_is_an_error(site_db: Path):
    proc = subprocess.run([sys.executable, "manage.py", "mcp", "stdio", "--user", "nobody"],
                          cwd=SITE, env=site_env(site_db), capture_output=True, text=True,
                          timeout=WAIT, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0 and "no user 'nobody'" in proc.stderr


def test_manage_py_mcp_inspect_lists_the_discovered_tools(site_db: Path):
    listed = json.loads(manage(site_db, "mcp", "inspect", "--json").stdout)
    assert listed["server"]["name"] == "shop"  # MCPSYNC["NAME"]
    # shop/mcp.py was found by autodiscovery; an anonymous inspection does not see refund
    assert {"whoami", "count_orders", "add_order"} <= {t["name"] for t in listed["tools"]}
    assert "refund" not in {t["name"] for t in listed["tools"]}
    as_alice = manage(site_db, "mcp", "inspect", "--user", "alice").stdout
    assert "refund  Refund an order" in as_alice and as_alice.startswith("shop ")


def test_mcpsync_server_setting_names_the_projects_server(site_db: Path):
    listed = json.loads(manage(site_db, "mcp", "inspect", "--json",
                               SHOPSITE_MCPSYNC_EXTRA='{"SERVER": "shop.own_server:server"}'
                               ).stdout)
    assert listed["server"] == {"name": "own-server", "version": "2.0.0"}
    assert "whoami" in {t["name"] for t in listed["tools"]}  # shop/mcp.py registered there


def test_manage_py_check_warns_about_what_would_fail_in_production(site_db: Path):
    clean = manage(site_db, "check")
    assert "mcpsync." not in clean.stdout + clean.stderr
    problems = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=SITE, capture_output=True, text=True,
        timeout=WAIT, check=False,
        env=site_env(site_db, SHOPSITE_DEBUG="0",
                     SHOPSITE_MCPSYNC_EXTRA='{"ALLOW_ANONYMUS": true}',
                     SHOPSITE_EXTRA_MIDDLEWARE='["shop.compression.BrotliMiddleware"]'))
    out = problems.stdout + problems.stderr
    assert problems.returncode != 0  # an error (E001) fails the check
    assert "mcpsync.E001" in out and "ALLOW_ANONYMUS" in out
    assert "mcpsync.W001" in out  # several workers would each make up a request_state_key
    assert "mcpsync.W002" in out and "BrotliMiddleware" in out
    persistent = manage(site_db, "check", SHOPSITE_CONN_MAX_AGE="600")
    assert "mcpsync.I001" in persistent.stdout + persistent.stderr
    keyed = manage(site_db, "check", SHOPSITE_DEBUG="0",
                   MCPSYNC_REQUEST_STATE_KEY="a-key-every-worker-shares-0123456789")
    assert "mcpsync.W001" not in keyed.stdout + keyed.stderr


NOT_INSTALLED = """
import logging, django
from django.conf import settings
settings.configure(INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes"],
                   DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                                          "NAME": ":memory:"}})
django.setup()
from mcpsync import Server
from mcpsync.django import mcp_endpoint
view = mcp_endpoint(Server("x"))
view.endpoint.app.close()
"""


def test_an_endpoint_without_the_app_installed_says_so():
    proc = subprocess.run([sys.executable, "-c", NOT_INSTALLED], capture_output=True,
                          text=True, timeout=WAIT, check=False, cwd=SITE.parent)
    assert proc.returncode == 0, proc.stderr
    assert 'add "mcpsync.django" to INSTALLED_APPS' in proc.stderr


def test_a_retiring_handler_thread_closes_its_connection(tmp_path: Path):
    db = fresh_database(tmp_path)
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("orm_child.py"))],
                          env=site_env(db, SHOPSITE_CONN_MAX_AGE="600"),
                          capture_output=True, text=True, timeout=WAIT, check=False)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    # Persistent connections: kept between handlers, as Django keeps them between requests
    assert seen["open_after_handler"] is True
    assert seen["open_after_thread"] is False
