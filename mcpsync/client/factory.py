"""The transports :meth:`Client.stdio <mcpsync.Client.stdio>` and :meth:`Client.http
<mcpsync.Client.http>` make, and the defaults they give the client's options.

Each transport module is imported only when its constructor is called: a program that
only spawns stdio servers never imports ``requests``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping, Sequence
from typing import IO, Any

from ..engine.connection import DEFAULT_TIMEOUT
from ..transports.base import Transport


def stdio_transport(command: str | Sequence[str], options: MutableMapping[str, Any], *,
                    env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None,
                    stderr: IO[str] | None, inherit_env: bool) -> Transport:
    """A spawned server process; the client is named ``mcpsync-client-stdio`` unless
    ``options`` names it."""
    from ..transports.subprocess import SubprocessTransport

    transport = SubprocessTransport(
        command, env=env, cwd=cwd, stderr=stderr, inherit_env=inherit_env
    )
    options.setdefault("name", "mcpsync-client-stdio")
    return transport


def http_transport(url: str, options: MutableMapping[str, Any], *, session: Any,
                   headers: Mapping[str, str] | None, connect_timeout: float,
                   read_timeout: float | None, max_in_flight: int, max_message_bytes: int,
                   auth: Any) -> Transport:
    """A Streamable HTTP connection. ``read_timeout`` defaults to the client's ``timeout``
    plus 10 s (at least the transport's own default); the client is named
    ``mcpsync-client-http`` and asks for protocol version ``"auto"`` unless ``options``
    say otherwise."""
    from ..transports.http.transport import DEFAULT_READ_TIMEOUT, HttpTransport

    if read_timeout is None:
        timeout = options.get("timeout", DEFAULT_TIMEOUT)
        read_timeout = max(DEFAULT_READ_TIMEOUT, (timeout or 0.0) + 10.0)
    transport = HttpTransport(url, session=session, headers=headers,
                              connect_timeout=connect_timeout, read_timeout=read_timeout,
                              max_in_flight=max_in_flight,
                              max_message_bytes=max_message_bytes, auth=auth)
    options.setdefault("name", "mcpsync-client-http")
    options.setdefault("protocol_version", "auto")
    return transport
