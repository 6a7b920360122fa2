"""One server, one error class for each failure whatever the era (issue 28).

A 2025-11-25 server answers a missing resource -32002 and a 2026-07-28 one -32602 (with
``data: {"uri": ...}`` in both); the client raises :class:`ResourceNotFoundError` for both
(in 2026-07-28 also an :class:`InvalidParamsError`, which is what the code says), so code
written against one transport works on the other. Every other failure the two eras can
answer is compared too, each over memory and a real stdio subprocess in 2025-11-25 and
over real HTTP in 2026-07-28, against the same server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import (
    Client,
    HeaderMismatchError,
    InvalidParamsError,
    MethodNotFoundError,
    MissingClientCapabilityError,
    RequestTimeoutError,
    ResourceNotFoundError,
    UnsupportedProtocolVersionError,
)
from tests.client.era_errors_server import server
from tests.serving import client_over

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ROOT = Path(__file__).resolve().parents[2]
#: (transport, revision): the handshake era where a server answers it on stdio, the
#: stateless era where a server answers it over HTTP (and in memory, to pin the table).
WAYS = [("memory", LEGACY), ("stdio", LEGACY), ("http", MODERN), ("memory", MODERN),
        ("http", LEGACY)]
IDS = [f"{kind}-{version}" for kind, version in WAYS]


def connect(kind: str, version: str,
            **options: Any) -> contextlib.AbstractContextManager[Client]:
    return client_over(kind, server, "tests.client.era_errors_server", version, **options)


@pytest.fixture(params=WAYS, ids=IDS, scope="module")
def client(request: pytest.FixtureRequest) -> Iterator[Client]:
    kind, version = request.param
    with connect(kind, version) as client:
        assert client.protocol_version == version
        yield client


@pytest.mark.parametrize("uri", ["notes://nothing-here", "notes://item/missing"])
def test_a_missing_resource_is_a_resource_not_found_error_in_both_eras(client: Client,
                                                                         uri: str):
    with pytest.raises(ResourceNotFoundError) as info:
        client.read_resource(uri)
    assert info.value.data == {"uri": uri}
    if client.protocol_version == MODERN:
        # The code the revision gives it, and the class that code has always raised.
        assert info.value.code == -32602
        assert isinstance(info.value, InvalidParamsError)
    else:
        assert info.value.code == -32002
        assert not isinstance(info.value, InvalidParamsError)


@pytest.mark.parametrize("call", ["unknown tool", "unknown prompt", "missing argument",
                                  "invalid cursor", "unknown task"])
def test_invalid_params_are_invalid_params_and_never_a_missing_resource(client: Client,
                                                                        call: str):
    calls = {
        "unknown tool": lambda: client.call_tool("nope"),
        "unknown prompt": lambda: client.get_prompt("nope"),
        "missing argument": lambda: client.get_prompt("greet", {}),
        "invalid cursor": lambda: client.request("tools/list", {"cursor": "zz"}),
        "unknown task": lambda: client.request("tasks/get", {"taskId": "nope"}),
    }
    with pytest.raises(InvalidParamsError) as info:
        calls[call]()
    assert type(info.value) is InvalidParamsError
    assert info.value.code == -32602


def test_an_unknown_method_is_method_not_found(client: Client):
    with pytest.raises(MethodNotFoundError) as info:
        client.request("x/nothing")
    assert info.value.data == {"method": "x/nothing"}


def test_a_deadline_is_a_request_timeout(client: Client):
    with pytest.raises(RequestTimeoutError):
        client.call_tool("pause", {"seconds": 30}, timeout=0.3)
    assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}


def test_a_missing_client_capability(client: Client):
    """The handshake era has no error for it (the tool fails: an ``isError`` result);
    2026-07-28 answers -32021 naming what is required."""
    if client.protocol_version == LEGACY:
        result = client.call_tool("ask")
        assert result.is_error and "elicitation" in result.text
        return
    with pytest.raises(MissingClientCapabilityError) as info:
        client.call_tool("ask")
    assert info.value.code == -32021
    assert info.value.required_capabilities == {"elicitation": {}}


def test_headers_that_do_not_match_the_body_over_http_in_2026():
    """-32020: the client sent what the server's headers check refuses (a ``uri`` that
    is not a string has no ``Mcp-Name`` header)."""
    with connect("http", MODERN) as client, pytest.raises(HeaderMismatchError) as info:
        client.request("resources/read", {"uri": 5})
    assert info.value.code == -32020


def test_an_unsupported_revision_in_2026():
    """-32022 with the server's ``supported`` list, as ``.supported``."""
    with connect("http", MODERN) as client:
        meta = {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        with pytest.raises(UnsupportedProtocolVersionError) as info:
            client.request("tools/list", {"_meta": meta}, cache=False)
    assert info.value.code == -32022
    assert info.value.requested == "2099-01-01"
    assert MODERN in info.value.supported
