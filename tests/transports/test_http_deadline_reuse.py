"""An exchange ended after its answer was read in full no longer owns the connection: urllib3
gave it back to the pool as soon as the body ended, and another exchange may be using it by
now. Ending the first one (a caller that timed out just as its answer arrived, or the
watchdog at that moment) must not shut that connection under the other one."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
import requests

from mcpsync.protocol.deadline import Deadline
from mcpsync.transports.http.deadline import DeadlineAdapter, exchange
from tests.serving import shut_down

JOIN = 10.0


class _KeepAlive(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection open between requests
    connections: set[tuple[str, int]]

    def do_GET(self) -> None:
        self.server.connections.add(self.client_address)  # type: ignore[attr-defined]
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def keep_alive() -> Iterator[tuple[str, set[tuple[str, int]]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    server.daemon_threads = True
    server.connections = set()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="t-keepalive", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", server.connections  # type: ignore[attr-defined]
    finally:
        shut_down(server, thread, JOIN)
        server.server_close()


def test_ending_an_exchange_after_its_answer_leaves_the_pooled_connection_alone(keep_alive):
    url, connections = keep_alive
    session = requests.Session()
    session.mount("http://", DeadlineAdapter())
    with exchange(Deadline(JOIN, "GET")) as first:
        assert session.get(url, timeout=JOIN).content == b"ok"  # read in full: given back
        first.end("cancelled")  # the caller gave up just then
    # The next exchange takes the same kept-alive connection, and it is intact.
    with exchange(Deadline(JOIN, "GET")):
        assert session.get(url, timeout=JOIN).content == b"ok"
    assert len(connections) == 1, "the first exchange's end shut the pooled connection"
    session.close()
