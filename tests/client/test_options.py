"""``Client``'s option objects (``HostHandlers``, ``ClientLimits``, ``ClientMiddleware``)
and the flat keywords they replaced: each old keyword still works, warns with the new
spelling, and makes a client that behaves as the new spelling's does."""

from __future__ import annotations

import inspect
import warnings
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

# (old keyword, its value, the new keyword, the option object that holds it)
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
def test_an_old_keyword_warns_and_makes_the_same_client(server, old, value, keyword, options):
    extra = {"sampling_handler": _elicit} if old == "sampling_tools" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pattern = rf"Client\({old}=\.\.\.\) is deprecated: pass Client\({keyword}="
        with pytest.warns(DeprecationWarning, match=pattern) as caught, \
                Client.memory(server, **{old: value}, **extra) as flat:
            old_way = snapshot(flat)
    assert any(w.filename == __file__ for w in caught)  # the user's line, not mcpsync's
    with Client.memory(server, **{keyword: options}) as new:
        assert snapshot(new) == old_way
    with Client.memory(server) as plain:
        assert snapshot(plain) != old_way


def test_the_new_spelling_does_not_warn_and_the_defaults_are_the_old_ones(server):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Client.memory(server, host=HostHandlers(), limits=ClientLimits(),
                           middleware=ClientMiddleware()) as client:
            grouped = snapshot(client)
    with Client.memory(server) as client:
        assert snapshot(client) == grouped


@pytest.mark.parametrize("spelling", ["old", "new"])
def test_both_spellings_answer_an_elicitation(server, spelling):
    options: dict[str, Any] = ({"elicitation_handler": _elicit} if spelling == "old"
                               else {"host": HostHandlers(elicitation=_elicit)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with Client.memory(server, protocol_version="2025-11-25", **options) as client:
            assert client.call_tool("hello", {}).content[0].text == "hello Ada"


@pytest.mark.parametrize("spelling", ["old", "new"])
def test_both_spellings_hand_questions_to_the_caller(server, spelling):
    wanted = {"elicitation": {}}  # what the caller will answer
    options: dict[str, Any] = (
        {"input_mode": "manual", "extra_capabilities": wanted} if spelling == "old"
        else {"host": HostHandlers(input_mode="manual", extra_capabilities=wanted)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with Client.memory(server, protocol_version="2026-07-28", **options) as client, \
                pytest.raises(InputRequiredError):
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
