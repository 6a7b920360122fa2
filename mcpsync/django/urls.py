"""``path("", include("mcpsync.django.urls"))``: the project's server (``get_server()``)
at ``MCPSYNC["PATH"]`` (default ``"mcp"``), for a URLconf that prefers an ``include`` to
calling :func:`~mcpsync.django.mcp_endpoint` itself."""

from __future__ import annotations

from django.urls import path

from . import conf
from .endpoint import mcp_endpoint

app_name = "mcpsync"
urlpatterns = [path(str(conf.get("PATH")).strip("/"), mcp_endpoint(), name="endpoint")]
