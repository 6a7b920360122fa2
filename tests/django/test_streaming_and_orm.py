"""Through the test site's whole middleware stack (GZipMiddleware first): an SSE answer's
progress reaches the client while the tool still runs; and the ORM from handler threads:
a thousand calls leave no more open database connections than there are handler
threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from mcpsync import Client
from tests.helpers import WAIT

VERSIONS = ["2025-11-25", "2026-07-28"]
ALICE = {"Authorization": "Token alice-token"}


@pytest.mark.parametrize("version", VERSIONS)
def test_progress_streams_through_the_middleware_as_it_is_sent(site, version):
    first = threading.Event()
    seen: list[str] = []
    outcome: list[object] = []

    def progress(update) -> None:
        seen.append(update.message)
        first.set()

    with (Client.http(site + "/mcp", protocol_version=version, timeout=WAIT,
                      headers=ALICE) as caller,
          Client.http(site + "/mcp", protocol_version=version, timeout=WAIT,
                      headers=ALICE) as other):
        def call() -> None:
            try:
                outcome.append(caller.call_tool("wait_for_release", on_progress=progress).text)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=call, name="test-django-sse-call")
        worker.start()
        try:
            # The tool waits until released: its first progress can only have come through
            # while it runs (GZipMiddleware would have held it back until the end).
            assert first.wait(WAIT), "no progress arrived while the tool ran"
            assert not outcome
            assert seen == ["started"]
        finally:
            other.call_tool("release")
            worker.join(WAIT)
        assert not worker.is_alive()
    assert outcome == ["released"]


def test_a_thousand_orm_calls_leave_no_more_connections_than_handler_threads(site):
    with Client.http(site + "/mcp", protocol_version="2026-07-28", timeout=WAIT,
                     headers=ALICE) as client:
        client.call_tool("add_order", {"item": "tea"})

        def calls(n: int) -> set[int]:
            return {client.call_tool("count_orders").structured_content["result"]
                    for _ in range(n)}

        with ThreadPoolExecutor(8, thread_name_prefix="test-django-orm") as pool:
            counts = set().union(*pool.map(calls, [125] * 8))
        assert counts and min(counts) >= 1
        seen = client.call_tool("connections").structured_content
    handler_threads = seen["handler_threads"]
    assert handler_threads, seen
    assert len(seen["open"]) <= len(handler_threads), seen
    # CONN_MAX_AGE=0: as after a Django request, no handler thread keeps one at all (the
    # one open is the request thread's, serving this very call, whose token was looked up).
    assert not [name for name in seen["open"] if name.startswith("mcpsync-http-handler")]
