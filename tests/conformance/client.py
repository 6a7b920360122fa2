"""The conformance suite's client under test: ``python tests/conformance/client.py URL``.

The suite starts a mock server per scenario and runs this with ``MCP_CONFORMANCE_SCENARIO``
(and ``MCP_CONFORMANCE_PROTOCOL_VERSION``, ``MCP_CONFORMANCE_CONTEXT``) set; it judges what
the client sends. Everything goes through mcpsync's public :class:`~mcpsync.Client`.
Exit status 0 when the scenario ran to its end.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

from mcpsync import (
    AuthorizationError,
    Client,
    ElicitResult,
    FollowRedirects,
    HostHandlers,
    MCPSyncError,
    OAuth,
)

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


def accept_with_defaults(params: Any) -> ElicitResult:
    """Accept every form with no answers of its own: the client fills in the defaults."""
    return ElicitResult(action="accept", content={})


#: The Client ID Metadata Document URL the auth scenarios expect a CIMD-capable client to
#: use (the suite's authorization servers never fetch it).
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def oauth_for(scenario: str, context: dict[str, Any]) -> OAuth | None:
    """The auth scenarios' OAuth: the IdP's ID token exchanged for an ID-JAG for the
    enterprise scenario; the workload's JWT as the grant for wif-jwt-bearer;
    client credentials for the extension's scenarios (a secret or a PEM key from the
    context); else the authorization code flow with the suite's pre-registered credentials
    when it gives them, the CIMD URL, and a redirect handler that follows the suite's
    authorization server (which approves at once)."""
    if not scenario.startswith("auth/"):
        return None
    if scenario == "auth/enterprise-managed-authorization":
        return OAuth.enterprise(
            id_token=context["idp_id_token"], idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context["idp_client_id"], client_id=context["client_id"],
            client_secret=context["client_secret"])
    if scenario == "auth/wif-jwt-bearer":
        return OAuth.jwt_bearer(context["valid_jwt"], client_id=context.get("client_id"))
    if scenario.startswith("auth/client-credentials"):
        if context.get("private_key_pem"):
            return OAuth.client_credentials(
                context["client_id"], private_key_pem=context["private_key_pem"],
                signing_algorithm=context.get("signing_algorithm") or "ES256")
        return OAuth.client_credentials(context["client_id"],
                                        client_secret=context.get("client_secret"))
    return OAuth(client_id=context.get("client_id"), client_secret=context.get("client_secret"),
                 client_metadata_url=CIMD_URL, redirect_handler=FollowRedirects(),
                 redirect_uri="http://localhost:3000/callback", client_name="mcpsync-conformance")


def connect(url: str, version: str | None, auth: OAuth | None = None) -> Client:
    modern = version is not None and version >= "2026-07-28"
    return Client.http(url, protocol_version=version if modern else (version or "auto"),
                       host=HostHandlers(elicitation=accept_with_defaults), timeout=30.0, auth=auth)


def run_auth(scenario: str, url: str, version: str | None, context: dict[str, Any]) -> None:
    """List the tools and call the first: the scenarios judge the authorization around it
    (a 401 first, a 403 step-up on the call, a moved authorization server on the second
    request). An authorization refusal ends the run (some scenarios expect one)."""
    with connect(url, version, oauth_for(scenario, context)) as client:
        tools = client.list_tools()
        if tools:
            client.call_tool(tools[0].name, {})


def call_all(client: Client, calls: list[tuple[str, dict[str, Any]]],
             parallel: bool = False) -> None:
    errors: list[BaseException] = []

    def call(name: str, arguments: dict[str, Any]) -> None:
        try:
            client.call_tool(name, arguments)
        except MCPSyncError as exc:  # the scenario judges the wire, not the answer
            print(f"{name}: {exc}", file=sys.stderr)
        except BaseException as exc:
            errors.append(exc)

    if not parallel:
        for name, arguments in calls:
            call(name, arguments)
    else:
        threads = [threading.Thread(target=call, args=c, name=f"conformance-{c[0]}")
                   for c in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60.0)
    if errors:
        raise errors[0]


def run(scenario: str, url: str, version: str | None, context: dict[str, Any]) -> None:
    if scenario.startswith("auth/"):
        run_auth(scenario, url, version, context)
        return
    with connect(url, version) as client:
        tools = client.list_tools()
        names = [tool.name for tool in tools]
        if context.get("toolCalls"):
            call_all(client, [(c["name"], c.get("arguments") or {})
                              for c in context["toolCalls"]])
        elif scenario == "tools_call":
            call_all(client, [("add_numbers", {"a": 5, "b": 3})])
        elif scenario == "json-schema-2020-12-preservation":
            echo = next(t for t in tools if "schema" in (t.input_schema.get("properties") or {}))
            focal = next(t for t in tools if t.name != echo.name)
            call_all(client, [(echo.name, {"schema": focal.input_schema})])
        elif scenario == "http-standard-headers":
            call_all(client, [(names[0], {})] if names else [])
            resources = client.list_resources()
            if resources:
                client.read_resource(resources[0].uri)
            prompts = client.list_prompts()
            if prompts:
                client.get_prompt(prompts[0].name, {})
        elif scenario in ("initialize", "json-schema-ref-no-deref"):
            pass
        else:
            # sse-retry, elicitation defaults, MRTR, invalid tool headers, request metadata:
            # call every tool the client kept; the MRTR ones side by side.
            call_all(client, [(name, {}) for name in names],
                     parallel=scenario == "sep-2322-client-request-state")


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        run(scenario, sys.argv[-1], version, context)
    except AuthorizationError as exc:  # some auth scenarios expect a refusal: one line
        print(f"authorization refused: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
