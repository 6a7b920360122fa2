"""How a view's HTML is made per read (a string, a function, a Jinja2 or Django
template), what the extension refuses at registration, and the host's CSP rules."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from mcpsync import Client, HandlerContext, HostHandlers, Server
from mcpsync.apps import Apps
from mcpsync.apps.host import CspError, policy, with_policy
from mcpsync.apps.wire import host_capabilities
from mcpsync.errors import ResourceNotFoundError
from tests.helpers import require_module
from tests.serving import ROOT


def _read(server: Server, uri: str) -> str:
    with Client.memory(server, host=HostHandlers(extra_capabilities=host_capabilities())
                       ) as client:
        text: str = client.read_resource(uri).contents[0].text  # type: ignore[union-attr]
        return text


def test_a_function_view_is_called_per_read_with_the_context() -> None:
    server = Server("s")
    apps = server.use(Apps())
    count = itertools.count(1)

    @apps.view("ui://s/counter")
    def counter(ctx: HandlerContext) -> str:
        return f"<p>read {next(count)} by {ctx.session.client_info['name']}</p>"

    assert _read(server, "ui://s/counter") == "<p>read 1 by mcpsync</p>"
    assert _read(server, "ui://s/counter") == "<p>read 2 by mcpsync</p>"


def test_a_jinja2_template_is_rendered_per_read() -> None:
    jinja2 = require_module("jinja2")
    server = Server("s")
    apps = server.use(Apps())
    template = jinja2.Environment(autoescape=True).from_string(
        "<h1>{{ title }}</h1><p>{{ note }}</p>")
    apps.view("ui://s/page", template, context=lambda ctx: {"title": "Sales", "note": "<b>"})
    assert _read(server, "ui://s/page") == "<h1>Sales</h1><p>&lt;b&gt;</p>"


def test_a_django_template_is_rendered_per_read() -> None:
    engine = require_module("django.template", package="django").Engine()
    server = Server("s")
    apps = server.use(Apps())
    apps.view("ui://s/page", engine.from_string("<h1>{{ title }}</h1>"),
              context={"title": "Orders"})
    assert _read(server, "ui://s/page") == "<h1>Orders</h1>"


def test_bad_options_are_refused_at_registration() -> None:
    server = Server("s")
    apps = server.use(Apps())
    with pytest.raises(ValueError, match="ui= must be a ui:// URI"):
        server.tool(ui="https://example.com/view")
    with pytest.raises(ValueError, match="ui_visibility="):
        server.tool(ui_visibility=["agent"])
    with pytest.raises(ValueError, match="csp keys"):
        apps.view("ui://s/v", "<p></p>", csp={"scriptDomains": ["https://x.example"]})
    with pytest.raises(ValueError, match="fixed ui:// URI"):
        apps.view("ui://s/{id}", "<p></p>")
    with pytest.raises(ValueError, match="Apps"):
        Server("t").use(Apps()).install(server)


def test_the_host_policy_allows_only_what_was_declared() -> None:
    assert policy(None) == (
        "default-src 'none'; script-src 'self' 'unsafe-inline'; "
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; "
        "media-src 'self' data:; connect-src 'none'; frame-src 'none'; object-src 'none'; "
        "base-uri 'self'")
    declared = policy({"connectDomains": ["https://api.example.com"],
                       "resourceDomains": ["https://*.cdn.example"]})
    assert "connect-src https://api.example.com;" in declared
    assert "script-src 'self' 'unsafe-inline' https://*.cdn.example;" in declared


@pytest.mark.parametrize("source", ["*", "'unsafe-eval'", "https://x.example; script-src *",
                                    "javascript:", "https://x.example 'unsafe-eval'", 3])
def test_a_source_that_is_not_an_origin_is_refused(source: object) -> None:
    with pytest.raises(CspError):
        policy({"resourceDomains": [source]})


def test_the_policy_meta_comes_before_the_content() -> None:
    html = "<!DOCTYPE html><script>alert(1)</script>"
    shown = with_policy(html, "default-src 'none'")
    assert shown.startswith('<!DOCTYPE html><meta http-equiv="Content-Security-Policy" '
                            'content="default-src \'none\'">')
    assert with_policy("<p>x</p>", "a").startswith("<meta ")


DJANGO_SCRIPT = """
import django
from django.conf import settings

settings.configure(TEMPLATES=[{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [], "OPTIONS": {"loaders": [("django.template.loaders.locmem.Loader", {
        "shop/orders_view.html": "<ul>{% for o in orders %}<li>{{ o }}</li>{% endfor %}</ul>",
    })]},
}])
django.setup()
from django.template.loader import get_template

from mcpsync import Client, Server
from mcpsync.apps import Apps

server = Server("shop")
apps = server.use(Apps())
apps.view("ui://shop/orders", get_template("shop/orders_view.html"),
          context=lambda ctx: {"orders": ["tea", "<scones>"]})
with Client.memory(server) as client:
    print(client.read_resource("ui://shop/orders").contents[0].text)
"""


def test_a_django_project_template_is_rendered_per_read() -> None:
    """``get_template`` of a configured project (the backend's Template, rendered with a
    dict), in its own interpreter: Django's settings are per process."""
    require_module("django")
    done = subprocess.run([sys.executable, "-c", DJANGO_SCRIPT], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "<ul><li>tea</li><li>&lt;scones&gt;</li></ul>"


def test_a_view_takes_the_resource_options_of_other_extensions() -> None:
    """``tags=`` (visibility): a view disabled by tag is unknown, as any resource."""
    server = Server("s")
    apps = server.use(Apps())
    apps.view("ui://s/admin", "<p>admin</p>", tags={"admin"})
    server.disable(tags={"admin"})
    with Client.memory(server) as client:
        assert client.list_resources() == []
        with pytest.raises(ResourceNotFoundError):
            client.read_resource("ui://s/admin")
    with pytest.raises(TypeError, match="colour"):
        apps.view("ui://s/x", "<p></p>", colour="red")


@pytest.mark.parametrize("sources", ["https://cdn.example", ["*"], ["'unsafe-eval'"],
                                     ["https://x.example; script-src *"]])
def test_a_csp_that_is_not_origins_is_refused_at_registration(sources: object) -> None:
    apps = Server("s").use(Apps())
    with pytest.raises(ValueError, match="list of origins"):
        apps.view("ui://s/v", "<p></p>", csp={"resourceDomains": sources})  # type: ignore[dict-item]
