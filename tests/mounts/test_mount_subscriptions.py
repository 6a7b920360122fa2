"""A parent passes a subscription on to a mounted proxy without holding anything that other
subscriptions wait for (issue 34: a subscribe to the parent's own URI waited 7.3 s behind
a mounted proxy's slow remote): the remote's round trip holds up only subscriptions to
the same URI.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, Server
from tests.helpers import WAIT, run_threads

ERAS = ("2025-11-25", "2026-07-28")
#: Far shorter than the remote's hold-up; far longer than a subscribe takes.
QUICK = 3.0


class SlowRemote:
    """A remote whose ``resources/subscribe`` waits until released (bounded)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.server = remote = Server("remote")

        @remote.resource("slow://thing")
        def thing() -> str:
            return "thing"

        @remote.method_handler("resources/subscribe")
        def subscribe(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
            self.entered.set()
            self.release.wait(WAIT)
            return {}

        @remote.method_handler("resources/unsubscribe")
        def unsubscribe(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
            return {}


@pytest.mark.parametrize("version", ERAS)
def test_a_slow_remote_subscription_holds_up_no_other_uri(version: str) -> None:
    remote = SlowRemote()
    proxy = Server.proxy(remote.server, name="proxy", protocol_version="2025-11-25",
                         timeout=WAIT)
    parent = Server("parent")

    @parent.resource("main://readme")
    def readme() -> str:
        return "read me"

    parent.mount(proxy, prefix="far")
    try:
        with (Client.memory(parent, protocol_version="2025-11-25", timeout=WAIT) as slow,
              Client.memory(parent, protocol_version=version, timeout=WAIT) as quick):

            def subscribe_slow(_: int) -> None:
                slow.subscribe("slow://far/thing")

            done: list[float] = []

            def subscribe_quick(_: int) -> None:
                assert remote.entered.wait(WAIT), "the remote was never asked"
                started = time.monotonic()
                if version == "2025-11-25":
                    quick.subscribe("main://readme")
                else:
                    quick.listen(tools=False, prompts=False, resources=False,
                                 resource_uris=["main://readme"]).close()
                done.append(time.monotonic() - started)
                remote.release.set()

            run_threads(lambda n: (subscribe_slow, subscribe_quick)[n](n), 2,
                        name="t-mount-sub", timeout=WAIT * 2)
            assert done and done[0] < QUICK, f"the own URI waited {done[0]:.1f} s"
    finally:
        remote.release.set()
        proxy.stop()
