"""A blocking client that serves the server's questions: elicitation and sampling handlers.

    python examples/notes_client.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcpsync import (
    Client,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    HostHandlers,
    MCPError,
    TextContent,
)

SERVER = Path(__file__).with_name("notes_server.py")


def answer_form(params: ElicitRequestParams) -> ElicitResult:
    """Stands in for a dialog shown to the user."""
    print(f"server asks: {params.message}")
    return ElicitResult("accept", {"title": "groceries", "text": "eggs, milk"})


def fake_model(params: CreateMessageRequestParams) -> CreateMessageResult:
    """Stands in for a call to an LLM."""
    lines = params.messages[0].content.text.count("\n")
    return CreateMessageResult("assistant", TextContent(f"{lines} notes, all fine"),
                               model="fake-1")


def main() -> int:
    host = HostHandlers(elicitation=answer_form, sampling=fake_model)
    with Client.stdio([sys.executable, str(SERVER)], host=host, timeout=30) as client:
        print("resources:", [r.uri for r in client.list_resources()])
        print("templates:", [t.uri_template for t in client.list_resource_templates()])
        print(client.call_tool("add_note").text)
        print("note:", client.read_resource("notes://note/groceries").text)
        try:
            client.read_resource("notes://note/missing")
        except MCPError as exc:
            print(f"missing note: error {exc.code}: {exc.message}")
        print("complete 'gr':", client.complete("notes://note/{title}", "title", "gr").values)
        print("summary:", client.call_tool("summarize_notes").text)
        prompt = client.get_prompt("review", {"title": "groceries"})
        print("prompt:", prompt.messages[0].content.text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
