"""Django, with the MCP endpoint at /mcp protected by the site's own tokens."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "oauthsite.settings")

from django.core.wsgi import get_wsgi_application

from mcpsync import HandlerContext, Server
from mcpsync.http import mount

django_app = get_wsgi_application()

from .issuer import issuer  # noqa: E402

mcp = Server("django-oauth-site")


@mcp.tool()
def whoami(ctx: HandlerContext) -> str:
    """Who the signed-in user is, as the access token says."""
    assert ctx.auth is not None
    name = ctx.auth.claims.get("name") or ctx.auth.subject
    return f"You are {name} (user {ctx.auth.claims.get('preferred_username')})."


application = mount(django_app, mcp, "/mcp", auth=issuer.resource_server())
