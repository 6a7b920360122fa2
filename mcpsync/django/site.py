"""The project's MCP server, and the apps' ``mcp.py`` modules that fill it.

As ``django.contrib.admin`` has one ``admin.site`` that each app's ``admin.py`` registers
into, a project has one MCP server (:func:`get_server`) that each installed app's
``mcp.py`` registers its tools, resources and prompts into::

    # shop/mcp.py
    from mcpsync.django import get_server

    server = get_server()

    @server.tool(permission="shop.view_order")
    def order_status(number: int) -> str:
        ...

The server is ``MCPSYNC["SERVER"]`` (a dotted path to a :class:`~mcpsync.Server` of your
own) or one made from ``MCPSYNC["NAME"]``/``["VERSION"]``. :func:`autodiscover` imports
every app's ``mcp`` module once; the app config calls it when Django is ready (unless
``MCPSYNC["AUTODISCOVER"]`` is false), and so does every entry point here.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from . import conf

if TYPE_CHECKING:
    from ..server.server import ServerCore

_lock = threading.RLock()
_server: Any = None
_discovered = False


def get_server() -> ServerCore:
    """The project's MCP server (made once per process)."""
    global _server
    with _lock:
        if _server is None:
            configured = conf.get("SERVER")
            if configured is not None:
                _server = conf.load(configured)
            else:
                from ..facade import Server

                _server = Server(str(conf.get("NAME")), version=str(conf.get("VERSION")))
        return _server  # type: ignore[no-any-return]


def autodiscover() -> None:
    """Import the ``mcp`` module of every installed app that has one (once per process;
    an app whose ``mcp.py`` fails to import raises, as ``admin.autodiscover`` does)."""
    global _discovered
    with _lock:
        if _discovered:
            return
        _discovered = True
        from django.utils.module_loading import autodiscover_modules

        get_server()
        try:
            autodiscover_modules("mcp")
        except BaseException:
            _discovered = False
            raise


__all__ = ["autodiscover", "get_server"]
