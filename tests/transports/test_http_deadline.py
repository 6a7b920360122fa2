"""An HTTP exchange on a session with DeadlineAdapter ends by its deadline however the
server trickles, and at once when ended from another thread; its connection is not reused.
Each of these hangs (or takes the trickle's whole length) with requests' per-read timeouts
alone."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from mcpsync.protocol.deadline import Deadline, DeadlineExceeded
from mcpsync.transports.http.deadline import exchange, timeouts, tracked_session
from tests.transports.hostile import RawHttpServer, RawRequest, trickle_body, trickle_head


def never_answer(request: RawRequest) -> None:
    request.server.stopping.wait(30)


@pytest.mark.parametrize("script", [trickle_body(), trickle_head()], ids=["body", "head"])
def test_a_trickle_ends_at_the_deadline(script: object) -> None:
    session = tracked_session()
    with RawHttpServer(script) as server:  # type: ignore[arg-type]
        deadline = Deadline(1.0, "GET the key set")
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match="GET the key set"), exchange(deadline):
            response = session.get(server.url, timeout=timeouts(deadline, 3, 3), stream=True)
            response.content  # noqa: B018 - reading the body is the point
        assert time.monotonic() - started < 3.0
        server.stopping.set()


def test_a_plain_session_only_gets_per_read_timeouts() -> None:
    # Without the adapter nothing can end the trickle early: the limit this module lifts.
    with RawHttpServer(trickle_body()) as server:
        deadline = Deadline(0.5, "GET")
        started = time.monotonic()
        with exchange(deadline):
            response = requests.get(server.url, timeout=timeouts(deadline, 3, 3),
                                    stream=True)
            chunk = response.raw.read(1)
        assert chunk == b" " and time.monotonic() - started < 3.0
        server.stopping.set()


def test_end_from_another_thread_frees_the_blocked_thread_at_once() -> None:
    session = tracked_session()
    with RawHttpServer(never_answer) as server:
        ready = threading.Event()
        outcome: list[BaseException] = []
        holder: list[object] = []

        def post() -> None:
            try:
                with exchange(Deadline(60, "POST")) as current:
                    holder.append(current)
                    ready.set()
                    session.post(server.url, data=b"{}", timeout=(5, 60))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=post, name="test-post")
        thread.start()
        assert ready.wait(5)
        assert server.wait_for(lambda: bool(server.requests), 5)
        started = time.monotonic()
        holder[0].end("cancelled")  # type: ignore[attr-defined]
        thread.join(5)
        assert not thread.is_alive(), "the POST thread stayed blocked"
        assert time.monotonic() - started < 2.0
        assert outcome and not isinstance(outcome[0], DeadlineExceeded)
        server.stopping.set()


def test_an_ended_connection_is_not_reused() -> None:
    session = tracked_session()
    answered: list[int] = []

    def script(request: RawRequest) -> None:
        if request.path.endswith("slow"):
            never_answer(request)
        else:
            answered.append(1)
            request.send_body(b"{}")

    with RawHttpServer(script) as server:
        with pytest.raises(DeadlineExceeded), exchange(Deadline(0.3, "slow")):
            session.get(server.url + "/slow", timeout=(5, 5))
        response = session.get(server.url + "/fast", timeout=(5, 5))
        assert response.status_code == 200 and answered == [1]
        server.stopping.set()


def test_an_exchange_that_ends_in_time_is_untouched() -> None:
    session = tracked_session()

    def script(request: RawRequest) -> None:
        request.send_body(b'{"ok": true}')

    with RawHttpServer(script) as server:
        for _ in range(3):
            with exchange(Deadline(5, "GET")):
                assert session.get(server.url, timeout=(5, 5)).json() == {"ok": True}


def test_timeouts_never_exceed_what_is_left() -> None:
    deadline = Deadline(0.2)
    connect, read = timeouts(deadline, 3, 10)
    assert 0 < connect <= 0.2 and 0 < read <= 0.2
    assert timeouts(Deadline.never(), 3, 10) == (3, 10)
    assert timeouts(Deadline(0), 3, 10) == (0.001, 0.001)
