"""``Client``'s option objects (``HostHandlers``, ``ClientLimits``, ``ClientMiddleware``):
each sets what the client does, and the flat keywords they replaced are gone (mcpsync is
0.x: no deprecation period)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from mcpsync import (
    Client,
    ClientLimits,
    ClientMiddleware,
    ElicitResult,
    HandlerContext,
    HostHandlers,
    Root,
    Server,
)
from mcpsync.client import InputRequiredError


def _elicit(params: Any) -> ElicitResult:
    return ElicitResult("accept", {"name": "Ada"})


def _hear(params: dict[str, Any]) -> None:
    pass


def _pass(message: Any, next_: Any) -> Any:
    return next_(message)


ROOTS = [Root("file:///srv")]
CUSTOM = {"x/ping": lambda request, params: {}}
HEARD = {"x/note": _hear}

# (the flat keyword that is gone, its value, the keyword now, the option object)
MOVED: list[tuple[str, Any, str, Any]] = [
    ("elicitation_handler", _elicit, "host", HostHandlers(elicitation=_elicit)),
    ("sampling_handler", _elicit, "host", HostHandlers(sampling=_elicit)),
    ("sampling_tools", True, "host", HostHandlers(sampling=_elicit, sampling_tools=True)),
    ("roots", ROOTS, "host", HostHandlers(roots=ROOTS)),
    ("input_mode", "manual", "host", HostHandlers(input_mode="manual")),
    ("extra_capabilities", {"x": {}}, "host", HostHandlers(extra_capabilities={"x": {}})),
    ("method_handlers", CUSTOM, "host", HostHandlers(methods=CUSTOM)),
    ("notification_handlers", HEARD, "host", HostHandlers(notifications=HEARD)),
    ("max_handlers", 2, "limits", ClientLimits(max_handlers=2)),
    ("max_input_rounds", 3, "limits", ClientLimits(max_input_rounds=3)),
    ("max_queued_notifications", 5, "limits", ClientLimits(max_queued_notifications=5)),
    ("max_queued_notification_bytes", 512, "limits",
     ClientLimits(max_queued_notification_bytes=512)),
    ("send_middleware", [_pass], "middleware", ClientMiddleware(send=[_pass])),
    ("recv_middleware", [_pass], "middleware", ClientMiddleware(recv=[_pass])),
]


@pytest.fixture(scope="module")
def server() -> Server:
    server = Server("options", request_state_key="options-test")

    @server.tool()
    def hello(ctx: HandlerContext) -> str:
        answer = ctx.elicit("Who?", {"type": "object",
                                     "properties": {"name": {"type": "string"}}})
        return f"hello {answer.content['name']}" if answer.content else "hello"

    return server


def snapshot(client: Client) -> dict[str, Any]:
    """What the options set on a client, as the rest of the code reads it."""
    connection = client._connection
    return {
        "capabilities": client.capabilities(),
        "methods": sorted(client.methods.request_methods()),
        "notifications": sorted(client.methods.notification_methods()),
        "limits": connection.limits,
        "middleware": (connection._executor._send, connection._executor._recv),
        "calls": vars(client._options),
    }


@pytest.mark.parametrize(("old", "value", "keyword", "options"), MOVED,
                         ids=[row[0] for row in MOVED])
def test_each_option_object_changes_the_client_and_the_flat_keyword_is_gone(
        server, old, value, keyword, options):
    with Client.memory(server, **{keyword: options}) as grouped, Client.memory(server) as plain:
        assert snapshot(grouped) != snapshot(plain)
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{old}'"):
        Client.memory(server, **{old: value})


def test_the_default_option_objects_are_the_defaults(server):
    with Client.memory(server, host=HostHandlers(), limits=ClientLimits(),
                       middleware=ClientMiddleware()) as client:
        grouped = snapshot(client)
    with Client.memory(server) as client:
        assert snapshot(client) == grouped


def test_host_handlers_answer_an_elicitation(server):
    with Client.memory(server, protocol_version="2025-11-25",
                       host=HostHandlers(elicitation=_elicit)) as client:
        assert client.call_tool("hello", {}).content[0].text == "hello Ada"


def test_host_handlers_hand_questions_to_the_caller(server):
    wanted = {"elicitation": {}}  # what the caller will answer
    with Client.memory(server, protocol_version="2026-07-28",
                       host=HostHandlers(input_mode="manual", extra_capabilities=wanted)) \
            as client, pytest.raises(InputRequiredError):
        client.call_tool("hello", {})


def test_the_checks_of_the_options_still_run(server):
    with pytest.raises(ValueError, match="input_mode"):
        Client.memory(server, host=HostHandlers(input_mode="later"))
    with pytest.raises(TypeError, match="unexpected keyword argument 'elicitation'"):
        Client.memory(server, elicitation=_elicit)


def test_client_stays_within_a_dozen_parameters():
    named = [p for p in inspect.signature(Client.__init__).parameters.values()
             if p.kind is not p.VAR_KEYWORD and p.name != "self"]
    assert len(named) <= 13, [p.name for p in named]
