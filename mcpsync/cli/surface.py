"""The client subcommands of ``mcpsync``: what a server offers, and using it.

``tools``, ``call``, ``resources``, ``read``, ``prompts``, ``prompt`` and ``inspect`` take
the same TARGET forms and the same options (:func:`_common`) and run through the one
:func:`~mcpsync.cli.session.ask` path; each is an action on the connected client and a way
to print what it returned.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from ..client import Client
from ..errors import METHOD_NOT_FOUND, MCPError
from ..protocol.versions import features
from . import args as cli_args
from . import values as cli_values
from .output import Reporter, as_json, result_text, tools_text
from .session import ask
from .surface_output import (
    Surface,
    messages_text,
    prompts_text,
    read_text,
    resources_json,
    resources_text,
    surface_json,
    surface_text,
)

T = TypeVar("T")

_TARGET_HELP = "a URL, a command line, or MODULE_OR_FILE:OBJ (see mcpsync --help)"
#: The client subcommands, for the parser and the dispatcher.
COMMANDS = ("tools", "call", "resources", "read", "prompts", "prompt", "inspect")


def add_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    """The client subcommands on ``sub`` (argparse's subparsers); returns their parsers."""
    parsers = []
    tools = sub.add_parser("tools", help="list the tools of a server")
    tools.add_argument("target", help=_TARGET_HELP)
    parsers.append(tools)
    call = sub.add_parser("call", help="call a tool")
    call.add_argument("target", help=_TARGET_HELP)
    call.add_argument("tool", help="the name of the tool to call")
    # default=[]: else argparse counts a "*" positional as required in its error message.
    call.add_argument("arguments", nargs="*", default=[], metavar="ARGS",
                      help="the tool's arguments: KEY=VALUE words (each value typed by the "
                           "tool's input schema: a=1 is a number for a number parameter, "
                           "text for a string one), or one JSON object (default: none)")
    call.add_argument("--log-level", type=cli_args.level, default=None, metavar="LEVEL",
                      help="the least severe log message to show (default: all the server "
                           "sends)")
    parsers.append(call)
    resources = sub.add_parser("resources",
                               help="list the resources and resource templates of a server")
    resources.add_argument("target", help=_TARGET_HELP)
    parsers.append(resources)
    read = sub.add_parser("read", help="read a resource and print its contents")
    read.add_argument("target", help=_TARGET_HELP)
    read.add_argument("uri", help="the URI of the resource (a template filled in)")
    parsers.append(read)
    prompts = sub.add_parser("prompts", help="list the prompts of a server")
    prompts.add_argument("target", help=_TARGET_HELP)
    parsers.append(prompts)
    prompt = sub.add_parser("prompt", help="get a prompt and print its messages")
    prompt.add_argument("target", help=_TARGET_HELP)
    prompt.add_argument("name", help="the name of the prompt")
    prompt.add_argument("arguments", nargs="*", default=[], metavar="ARGS",
                        help="the prompt's arguments as KEY=VALUE words (strings), or one "
                             "JSON object of strings")
    parsers.append(prompt)
    inspect = sub.add_parser(
        "inspect", help="everything a server offers: its info, protocol, capabilities, "
                        "instructions, tools, resources, templates and prompts")
    inspect.add_argument("target", help=_TARGET_HELP)
    parsers.append(inspect)
    for parser in parsers:
        _common(parser)
    return parsers


def _common(parser: argparse.ArgumentParser) -> None:
    """The options every client subcommand takes."""
    parser.add_argument("--timeout", type=cli_args.seconds, default=60.0, metavar="SECONDS",
                        help="deadline of each request (default 60)")
    parser.add_argument("--header", type=cli_args.header, action="append", default=None,
                        metavar="NAME:VALUE",
                        help="add this header to every HTTP request (repeatable)")
    parser.add_argument("--protocol-version", type=cli_args.version, default=None,
                        metavar="VERSION",
                        help=f"the protocol revision to speak: one of "
                             f"{', '.join(cli_args.VERSIONS)} (default: auto for a URL, "
                             f"2025-11-25 otherwise)")
    parser.add_argument("--json", action="store_true",
                        help="print JSON in the wire's shape (for scripts)")
    parser.add_argument("--auth", choices=["oauth"], default=None,
                        help="authorize with OAuth 2.1 when the server asks (a browser "
                             "window; tokens are kept for the next run)")


def run(args: argparse.Namespace) -> int:
    """Run the client subcommand ``args.command``; its exit status."""
    runner: Callable[[argparse.Namespace], int] = {
        "tools": _tools, "call": _call, "resources": _resources, "read": _read,
        "prompts": _prompts, "prompt": _prompt, "inspect": _inspect}[args.command]
    return runner(args)


def offered(client: Client, capability: str, lister: Callable[[], list[T]]) -> list[T] | None:
    """What ``lister`` lists, or None when the server does not offer that kind: it did not
    declare ``capability`` (so it is not asked), or it answered "method not found"."""
    if capability not in client.server_capabilities:
        return None
    try:
        return lister()
    except MCPError as exc:
        if exc.code == METHOD_NOT_FOUND:
            return None
        raise


def _tools(args: argparse.Namespace) -> int:
    tools = ask(args, lambda client: client.list_tools())
    print(as_json(tools) if args.json else tools_text(tools))
    return 0


def _call(args: argparse.Namespace) -> int:
    words: list[str] = args.arguments
    reporter = Reporter(args.tool)
    given = cli_values.json_object(words[0]) if cli_values.is_json_object(words) else None
    pairs = cli_values.split_words(words) if given is None else {}

    def action(client: Client) -> Any:
        arguments = given
        if arguments is None:
            # KEY=VALUE texts are typed by the tool's schema: list the tools to find it.
            schema = next((tool.input_schema for tool in client.list_tools()
                           if tool.name == args.tool), None) if pairs else None
            arguments = cli_values.tool_arguments(pairs, schema, args.tool)
        try:
            return client.call_tool(args.tool, arguments, on_progress=reporter.progress)
        finally:
            reporter.close()

    result = ask(args, action, on_log=reporter.log)
    # After close: every log message and progress update has been printed by now.
    print(as_json(result) if args.json else result_text(result))
    if result.is_error:
        if not args.json:
            print(f"mcpsync: the tool {args.tool!r} reported an error", file=sys.stderr)
        return 1
    return 0


def _resources(args: argparse.Namespace) -> int:
    def action(client: Client) -> tuple[list[Any] | None, list[Any] | None]:
        return (offered(client, "resources", client.list_resources),
                offered(client, "resources", client.list_resource_templates))

    resources, templates = ask(args, action)
    if args.json:
        print(resources_json(resources or [], templates or []))
    else:
        print(resources_text(resources, templates))
    return 0


def _read(args: argparse.Namespace) -> int:
    result = ask(args, lambda client: client.read_resource(args.uri))
    print(as_json(result) if args.json else read_text(result))
    return 0


def _prompts(args: argparse.Namespace) -> int:
    prompts = ask(args, lambda client: offered(client, "prompts", client.list_prompts))
    if args.json:
        print(as_json(prompts or []))
    elif prompts is None:
        print("prompts: not offered")
    else:
        print(prompts_text(prompts) if prompts else "prompts: none")
    return 0


def _prompt(args: argparse.Namespace) -> int:
    arguments = cli_values.prompt_arguments(args.arguments)
    result = ask(args, lambda client: client.get_prompt(args.name, arguments))
    print(as_json(result) if args.json else messages_text(result))
    return 0


def _inspect(args: argparse.Namespace) -> int:
    def action(client: Client) -> Surface:
        return Surface(
            server_info=client.server_info, protocol_version=client.protocol_version,
            era=features(client.protocol_version).era,
            capabilities=client.server_capabilities, instructions=client.instructions,
            tools=offered(client, "tools", client.list_tools),
            resources=offered(client, "resources", client.list_resources),
            templates=offered(client, "resources", client.list_resource_templates),
            prompts=offered(client, "prompts", client.list_prompts))

    surface = ask(args, action)
    print(surface_json(surface) if args.json else surface_text(surface))
    return 0


__all__ = ["COMMANDS", "add_parsers", "offered", "run"]
