"""``server.sessions()``: a session is listed from its connection until it closes, kept
by the server's ``ConnectedSessions`` (the session takes itself out: it needs nothing
private of its server)."""

from __future__ import annotations

from mcpsync import Client, Server
from tests.helpers import WAIT


def test_a_session_is_listed_until_it_closes() -> None:
    server = Server("sessions")
    with Client.memory(server):
        (staying,) = server.sessions()
        with Client.memory(server):
            (leaving,) = [s for s in server.sessions() if s is not staying]
        assert leaving.ended.wait(WAIT)
        assert server.sessions() == [staying]
    assert staying.ended.wait(WAIT)
    assert server.sessions() == []
