"""The authorization server in a Django site (tests/auth_server/django_site: Django's own
auth and login page, the ``mcpsync.django.oauth`` app and its migrations, the consent page
as a Django template), served by gunicorn with two workers sharing the database."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from mcpsync import OAuth
from tests.serving import ROOT, free_port, serving_process

from .driver import Browser
from .oauth_steps import REDIRECT_URI, Pkce, authorize_url, callback, register
from .test_example_site import full_flow

SITE = Path(__file__).resolve().parent / "django_site"
USERS = ("from django.contrib.auth.models import User; "
         "[User.objects.create_user(n, password='secret', first_name=n.title()) "
         "for n in ('alice', 'bob')]; "
         "User.objects.create_superuser('admin', password='secret')")


@pytest.fixture(scope="module")
def django_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    db = tmp_path_factory.mktemp("django-oauth") / "site.sqlite3"
    env = dict(os.environ, OAUTHSITE_URL=base, OAUTHSITE_DB=str(db),
               DJANGO_SETTINGS_MODULE="oauthsite.settings",
               PYTHONPATH=os.pathsep.join([str(SITE), str(ROOT)]))
    for command in (["migrate", "-v0"], ["shell", "-c", USERS]):
        done = subprocess.run([sys.executable, "manage.py", *command], cwd=SITE, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    argv = [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--workers", "2",
            "--threads", "4", "--bind", f"127.0.0.1:{port}", "oauthsite.wsgi:application"]
    with serving_process(argv, port, cwd=SITE, env=env) as served:
        yield served


def test_django_site_dynamic_registration(django_site: str) -> None:
    for user in ("alice", "bob"):
        full_flow(django_site, OAuth(redirect_uri=REDIRECT_URI,
                                     redirect_handler=Browser(user)), user, "2026-07-28")


def test_django_consent_template_escapes_and_forbids_framing(django_site: str) -> None:
    class Site:
        base = django_site
        mcp = django_site + "/mcp"

    client_id = register(Site, client_name="<script>alert(1)</script>")  # type: ignore[arg-type]
    browser = Browser("alice")
    url = authorize_url(Site, client_id, Pkce.new())  # type: ignore[arg-type]
    back = callback(browser.authorize(url))
    assert "code" in back and back["iss"] == django_site
    page = browser.consent_pages[0]
    assert "<script>" not in page and "&lt;script&gt;" in page
    answer = browser.get(url)
    assert answer.headers["X-Frame-Options"] == "DENY"
    # Without the consent form's own token: refused (Django's CSRF middleware does not
    # guard these views; ours does).
    refused = browser.session.post(django_site + "/authorize", timeout=10,
                                   allow_redirects=False,
                                   data={"client_id": client_id, "decision": "allow"})
    assert refused.status_code in (400, 403) and "Location" not in refused.headers


def test_django_refresh_reuse_revokes(django_site: str) -> None:
    oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=Browser("bob"))
    from mcpsync import Client

    with Client.http(django_site + "/mcp", auth=oauth, protocol_version="2026-07-28") as c:
        c.call_tool("whoami", {})
    token = oauth.token_for(django_site + "/mcp")
    assert token is not None and token.refresh_token
    import jwt

    client_id = jwt.decode(token.access_token, options={"verify_signature": False})["client_id"]

    def refresh(value: str) -> requests.Response:
        return requests.post(django_site + "/token", timeout=10, data={
            "grant_type": "refresh_token", "refresh_token": value, "client_id": client_id})

    first = refresh(token.refresh_token)
    assert first.status_code == 200
    assert refresh(token.refresh_token).json()["error"] == "invalid_grant"
    assert refresh(first.json()["refresh_token"]).status_code == 400


def test_the_store_contract_on_django(tmp_path: Path) -> None:
    env = dict(os.environ, OAUTHSITE_URL="http://127.0.0.1:1",
               OAUTHSITE_DB=str(tmp_path / "contract.sqlite3"),
               DJANGO_SETTINGS_MODULE="oauthsite.settings",
               PYTHONPATH=os.pathsep.join([str(SITE), str(ROOT)]))
    done = subprocess.run([sys.executable, "-m", "tests.auth_server.django_contract"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASS ") >= 9, done.stdout


def test_the_admin_lists_grants_and_revokes_them(django_site: str) -> None:
    import re

    oauth = OAuth(redirect_uri=REDIRECT_URI, redirect_handler=Browser("alice"),
                  client_name="Admin Visible Client")
    from mcpsync import Client

    with Client.http(django_site + "/mcp", auth=oauth, protocol_version="2026-07-28") as c:
        c.call_tool("whoami", {})
    token = oauth.token_for(django_site + "/mcp")
    assert token is not None
    admin = requests.Session()
    login = admin.get(django_site + "/admin/login/", timeout=10)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
    assert csrf is not None
    signed_in = admin.post(django_site + "/admin/login/?next=/admin/", timeout=10,
                           data={"username": "admin", "password": "secret",
                                 "csrfmiddlewaretoken": csrf.group(1), "next": "/admin/"})
    assert signed_in.status_code == 200
    listing = admin.get(django_site + "/admin/mcpsync_oauth/oauthgrant/", timeout=10)
    assert listing.status_code == 200
    rows = re.findall(r'name="_selected_action" value="(\d+)"', listing.text)
    assert rows, listing.text[:2000]
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', listing.text)
    assert csrf is not None
    headers = {"Authorization": f"Bearer {token.access_token}",
               "Content-Type": "application/json"}

    def status() -> int:
        return requests.post(django_site + "/mcp", headers=headers, data="{}",
                             timeout=10).status_code

    assert status() != 401
    done = admin.post(django_site + "/admin/mcpsync_oauth/oauthgrant/", timeout=10,
                      data={"action": "revoke", "_selected_action": rows,
                            "csrfmiddlewaretoken": csrf.group(1), "index": "0"})
    assert done.status_code == 200
    assert status() == 401
