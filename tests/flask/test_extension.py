"""mcpsync.flask.MCP on a real Flask app (Flask-Login, Flask-SQLAlchemy) under real
servers: Flask-Login's user is the MCP principal (session or token), anonymous is
refused, handlers run in the app context with Flask-SQLAlchemy's session removed after
each (a thousand calls leave no connection checked out), progress streams as sent; and
the ``flask mcp`` commands."""

from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from mcpsync import Client
from tests.helpers import WAIT

from .conftest import APP, app_env, flask

VERSIONS = ["2025-11-25", "2026-07-28"]
ALICE = {"Authorization": "Token alice-token"}


def login(base: str, name: str) -> str:
    with requests.Session() as browser:
        done = browser.post(base + "/login", data={"name": name, "password": "secret"},
                            timeout=20)
        assert done.status_code == 200, done.text
        return f"session={browser.cookies['session']}"


@pytest.mark.parametrize("version", VERSIONS)
def test_flask_login_user_is_the_principal(flask_site, version):
    ways = {"alice": ALICE, "bob": {"Authorization": "Token bob-token"},
            "bob ": {"Cookie": login(flask_site, "bob")}}
    for expected, headers in ways.items():
        with Client.http(flask_site + "/mcp", protocol_version=version, timeout=WAIT,
                         headers=headers) as client:
            assert client.call_tool("whoami").text == expected.strip()


def test_a_handler_reads_the_flask_request(flask_site):
    with Client.http(flask_site + "/mcp", timeout=WAIT,
                     headers={**ALICE, "X-Trace": "t-1"}) as client:
        assert client.call_tool("request_header", {"name": "X-Trace"}).text == "t-1"


def test_anonymous_is_refused(flask_site):
    refused = requests.post(flask_site + "/mcp", timeout=20,
                            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                            headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == -32600


def test_a_thousand_orm_calls_leave_no_connection_checked_out(flask_site):
    with Client.http(flask_site + "/mcp", protocol_version="2026-07-28", timeout=WAIT,
                     headers=ALICE) as client:
        assert client.call_tool("add_order", {"item": "tea"}).structured_content["result"]

        def calls(n: int) -> set[int]:
            return {client.call_tool("count_orders").structured_content["result"]
                    for _ in range(n)}

        with ThreadPoolExecutor(8, thread_name_prefix="test-flask-orm") as pool:
            counts = set().union(*pool.map(calls, [125] * 8))
        assert counts and min(counts) >= 1
        seen = client.call_tool("pool_status").structured_content
    assert seen["handler_threads"], seen
    assert seen["checked_out"] == 0, seen


def test_progress_streams_as_it_is_sent(flask_site):
    first = threading.Event()
    outcome: list[object] = []
    with (Client.http(flask_site + "/mcp", timeout=WAIT, headers=ALICE) as caller,
          Client.http(flask_site + "/mcp", timeout=WAIT, headers=ALICE) as other):
        def call() -> None:
            try:
                outcome.append(caller.call_tool("wait_for_release",
                                                on_progress=lambda p: first.set()).text)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=call, name="test-flask-sse-call")
        worker.start()
        try:
            assert first.wait(WAIT), "no progress arrived while the tool ran"
            assert not outcome
        finally:
            other.call_tool("release")
            worker.join(WAIT)
    assert outcome == ["released"]


def test_flask_mcp_inspect(app_db):
    listed = json.loads(flask(app_db, "mcp", "inspect", "--json").stdout)
    assert listed["server"]["name"] == "flask-shop"
    assert {"whoami", "count_orders"} <= {t["name"] for t in listed["tools"]}
    text = flask(app_db, "mcp", "inspect").stdout
    assert "whoami  The caller's name" in text


def test_flask_mcp_stdio_as_a_user(app_db):
    command = [sys.executable, "-m", "flask", "mcp", "stdio", "--user", "1"]
    with Client.stdio(command, cwd=APP, env=app_env(app_db), timeout=WAIT) as client:
        assert client.call_tool("whoami").text == "alice"
        assert client.call_tool("count_orders").structured_content["result"] >= 0
        assert client.call_tool("request_header", {"name": "X"}).text == "no request"


@pytest.mark.parametrize("version", VERSIONS)
def test_permissions_follow_the_flask_user(flask_site, version):
    with (Client.http(flask_site + "/mcp", protocol_version=version, timeout=WAIT,
                      headers=ALICE) as alice,
          Client.http(flask_site + "/mcp", protocol_version=version, timeout=WAIT,
                      headers={"Authorization": "Token bob-token"}) as bob):
        assert {t.name for t in alice.list_tools()} - {t.name for t in bob.list_tools()} == {
            "refund"}
        assert alice.call_tool("refund", {"order": 3}).text == "order 3 refunded by alice"
        errors = []
        for name in ("refund", "no_such_tool"):
            with pytest.raises(Exception) as caught:
                bob.call_tool(name, {"order": 3})
            errors.append((type(caught.value), str(caught.value).replace(name, "NAME")))
        assert errors[0] == errors[1]


def test_csrf_protect_guards_the_apps_forms_not_the_mcp_route(flask_site):
    # CSRFProtect is on: a POST to another route without a token is refused ...
    form = requests.post(flask_site + "/orders-form", data={"item": "x"}, timeout=20)
    assert form.status_code == 400 and "CSRF" in form.text
    # ... while MCP POSTs (JSON, no CSRF token) go through.
    with Client.http(flask_site + "/mcp", timeout=WAIT, headers=ALICE) as client:
        assert client.call_tool("whoami").text == "alice"


def test_a_session_belongs_to_the_user_that_made_it(flask_site):
    legacy = {"Content-Type": "application/json",
              "Accept": "application/json, text/event-stream",
              "MCP-Protocol-Version": "2025-11-25"}
    made = requests.post(flask_site + "/mcp", timeout=20, headers={**legacy, **ALICE},
                         json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "1"}}})
    assert made.status_code == 200, made.text
    session = {"Mcp-Session-Id": made.headers["Mcp-Session-Id"]}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    taken = requests.post(flask_site + "/mcp", json=listing, timeout=20,
                          headers={**legacy, "Authorization": "Token bob-token", **session})
    assert taken.status_code == 404, taken.text
    unknown = requests.post(flask_site + "/mcp", json=listing, timeout=20,
                            headers={**legacy, "Authorization": "Token bob-token",
                                     "Mcp-Session-Id": "0" * 32})
    assert taken.json() == unknown.json()  # another's session looks like no session at all
    own = requests.post(flask_site + "/mcp", json=listing, timeout=20,
                        headers={**legacy, **ALICE, **session})
    assert own.status_code == 200, own.text
