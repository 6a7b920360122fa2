"""The project's WSGI application: Django, with the MCP server mounted at /mcp.

    gunicorn --worker-class gthread --workers 1 --threads 16 \\
        --chdir examples/django_project notes_site.wsgi

Requests under /mcp go to the MCP endpoint without passing through Django's middleware;
everything else is Django's. One worker process (with threads): handshake-era MCP
sessions live in the process that created them.
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notes_site.settings")

from django.core.wsgi import get_wsgi_application

from mcpsync.http import mount

from .mcp_server import server

application = mount(get_wsgi_application(), server, "/mcp")
