"""A client's error answer to a reverse call, over Streamable HTTP (handshake era)."""

from __future__ import annotations

from mcpsync import Client
from tests.server.peer_error_server import server
from tests.server.test_peer_errors import LEGACY, REFUSING, check


def test_http(serve):
    served = serve(server)
    with Client.http(served.url, protocol_version=LEGACY, host=REFUSING) as client:
        check(client)
