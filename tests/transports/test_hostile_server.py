"""The raw test server itself (``hostile.py``): its ``stop()`` ends by a deadline.

A test's clean-up runs after pytest-timeout's one SIGALRM has fired, if the test hung: a
clean-up that can wait forever then hangs the whole run, past every backstop but the last.
socketserver's own ``server_close`` joined the connection threads with no bound, so a
script blocked on a client that neither reads nor hangs up held ``stop()`` for good.
"""

from __future__ import annotations

import socket
import threading

from tests.helpers import WAIT

from .hostile import RawHttpServer, RawRequest

MiB = 1 << 20

REQUEST = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


def _stop_in_time(server: RawHttpServer) -> None:
    errors: list[BaseException] = []

    def stop() -> None:
        try:
            server.stop()
        except BaseException as exc:  # reported below
            errors.append(exc)

    stopper = threading.Thread(target=stop, name="test-raw-stop", daemon=True)
    stopper.start()
    stopper.join(WAIT)
    assert not stopper.is_alive(), "stop() waited on a connection with no deadline"
    assert not errors, errors


def test_stop_ends_a_script_blocked_writing_to_a_client_that_never_reads() -> None:
    writing = threading.Event()

    def flood(request: RawRequest) -> None:
        request.send_head(200, length=100 * MiB)
        writing.set()
        for _ in range(100):
            request.sock.sendall(b"x" * MiB)  # blocks once the socket buffers are full

    server = RawHttpServer(flood)
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as client:
        client.sendall(REQUEST)
        assert writing.wait(WAIT)
        _stop_in_time(server)


def test_stop_ends_a_connection_that_never_sends_its_request() -> None:
    server = RawHttpServer(lambda request: request.accepted())
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as client:
        client.sendall(b"POST /mcp HTTP/1.1\r\n")  # and nothing more: the handler reads on
        assert server.wait_for(lambda: server.live_connections() == 1, WAIT)
        _stop_in_time(server)
