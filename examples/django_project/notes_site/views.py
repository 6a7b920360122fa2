"""Ordinary Django views, unaware of MCP."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from .mcp_server import BOOKS, LOCK


def index(request: HttpRequest) -> HttpResponse:
    return HttpResponse("Django books: see /books/; MCP clients connect to /mcp\n",
                        content_type="text/plain")


def books(request: HttpRequest) -> JsonResponse:
    with LOCK:
        return JsonResponse(dict(BOOKS))
