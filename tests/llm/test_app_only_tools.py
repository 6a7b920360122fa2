"""A model is never offered an app-only tool (MCP Apps: a tool whose ``_meta.ui.visibility``
lacks ``"model"`` is for the view alone; the revision: a host MUST NOT list it to the
model). A client that shows apps is listed such tools by the server, so the model
helpers' tool lists are where they are dropped. No SDK needed: tool definitions are
plain dicts."""

from __future__ import annotations

import pytest

from mcpsync import Client, HostHandlers
from mcpsync.apps import host_capabilities
from mcpsync.llm import anthropic as claude_tools
from mcpsync.llm import openai as openai_tools
from tests.apps import weather


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_an_app_only_tool_is_not_offered_to_the_model(version: str) -> None:
    with Client.memory(weather.build(), protocol_version=version,
                       host=HostHandlers(extra_capabilities=host_capabilities())) as host:
        tools = host.list_tools()
        assert "refresh" in [t.name for t in tools]  # listed: the view may call it
        offered = ["forecast", "advise"]
        assert [p["name"] for p in claude_tools.tool_params(tools)] == offered
        assert [p["function"]["name"] for p in openai_tools.tool_params(tools)] == offered
        assert [p["name"] for p in openai_tools.tool_params(tools, api="responses")] == offered
