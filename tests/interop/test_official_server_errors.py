"""What an official-SDK server answers a failing call, as mcpsync's Client raises it: the
same class as from a mcpsync server (issue 28). The official server answers a missing
resource -32602 naming the ``uri`` in 2025-11-25, where mcpsync's answers -32002: both
are :class:`ResourceNotFoundError`."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsync import (
    Client,
    InvalidParamsError,
    MethodNotFoundError,
    ResourceNotFoundError,
    UrlElicitationRequiredError,
)

pytestmark = pytest.mark.interop

SERVER = Path(__file__).with_name("servers") / "official_server.py"


def test_a_missing_resource_and_an_unknown_method(official_python: str):
    with Client.stdio([official_python, str(SERVER)], timeout=30) as client:
        assert client.protocol_version == "2025-11-25"
        with pytest.raises(ResourceNotFoundError) as info:
            client.read_resource("greeting://nothing")
        assert info.value.data == {"uri": "greeting://nothing"}
        assert isinstance(info.value, InvalidParamsError)  # its code is -32602
        with pytest.raises(MethodNotFoundError):
            client.request("x/nothing")


def test_a_url_elicitation_required_error(official_python: str):
    """-32042 (2025-11-25 only): the URLs the user must visit before the call can work,
    as ``.elicitations``."""
    server = Path(__file__).with_name("servers") / "url_elicitation_server.py"
    with (Client.stdio([official_python, str(server)], timeout=30) as client,
          pytest.raises(UrlElicitationRequiredError) as info):
        client.call_tool("files")
    assert info.value.code == -32042
    [elicitation] = info.value.elicitations
    assert elicitation["url"] == "https://example.com/authorize"
    assert elicitation["elicitationId"] == "auth-001"
