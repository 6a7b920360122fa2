"""A local stand-in for the model APIs the real ``anthropic`` and ``openai`` SDKs talk
to (their API is not reachable from the tests): a WSGI app served on a loopback port
(``tests.serving.RunningServer``) that checks each request as the real API would refuse
it (400 with the API's error shape) and answers from a script the test gives.

``/v1/messages`` (Anthropic Messages), ``/v1/chat/completions`` and ``/v1/responses``
(OpenAI). ``replies[path]`` is a list of functions ``fn(body) -> dict`` (the answer's
body); each request takes the next. Every request is kept in ``seen``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from werkzeug.wrappers import Request, Response

Reply = Callable[[dict[str, Any]], dict[str, Any]]


class ModelApi:
    def __init__(self) -> None:
        self.replies: dict[str, list[Reply]] = {}
        self.seen: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self._lock = threading.Lock()

    def script(self, path: str, *replies: Reply) -> None:
        with self._lock:
            self.replies.setdefault(path, []).extend(replies)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        try:
            body = json.loads(request.get_data(as_text=True) or "{}")
        except ValueError:
            return _error(400, "invalid_request_error", "body is not JSON")(environ,
                                                                             start_response)
        with self._lock:
            self.seen.append((request.path, body, dict(request.headers)))
            queue = self.replies.get(request.path)
            reply = queue.pop(0) if queue else None
        problem = _check(request.path, body)
        if problem is not None:
            return _error(400, "invalid_request_error", problem)(environ, start_response)
        if reply is None:
            return _error(404, "not_found_error", f"nothing scripted for {request.path}")(
                environ, start_response)
        return Response(json.dumps(reply(body)), content_type="application/json")(
            environ, start_response)


def _error(status: int, kind: str, message: str) -> Response:
    return Response(json.dumps({"type": "error", "error": {"type": kind, "message": message}}),
                    status=status, content_type="application/json")


def _check(path: str, body: dict[str, Any]) -> str | None:
    """What the real API would refuse in this request (the parts these tests use)."""
    if path == "/v1/messages":
        for key in ("model", "max_tokens", "messages"):
            if key not in body:
                return f"{key}: Field required"
        for tool in body.get("tools", []):
            if set(tool) - {"name", "description", "input_schema"} or \
                    tool.get("input_schema", {}).get("type") != "object":
                return f"tools: invalid tool {tool}"
        asked: set[str] = set()
        for message in body["messages"]:
            content = message["content"]
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_use":
                    asked.add(block["id"])
                if block.get("type") == "tool_result" and block["tool_use_id"] not in asked:
                    return f"tool_result {block['tool_use_id']} answers no tool_use"
        return None
    if path == "/v1/chat/completions":
        for tool in body.get("tools", []):
            if tool.get("type") != "function" or "name" not in tool.get("function", {}):
                return f"tools: invalid tool {tool}"
        asked = set()
        for message in body.get("messages", []):
            for call in message.get("tool_calls") or []:
                asked.add(call["id"])
            if message.get("role") == "tool" and message.get("tool_call_id") not in asked:
                return f"tool message {message.get('tool_call_id')} answers no tool call"
        return None
    if path == "/v1/responses":
        for tool in body.get("tools", []):
            if tool.get("type") != "function" or "name" not in tool:
                return f"tools: invalid tool {tool}"
        return None
    return f"unknown path {path}"


def claude_message(content: list[dict[str, Any]], stop_reason: str,
                   model: str = "claude-standin") -> dict[str, Any]:
    return {"id": "msg_standin", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10}}


def chat_completion(message: dict[str, Any], finish_reason: str,
                    model: str = "gpt-standin") -> dict[str, Any]:
    return {"id": "chatcmpl-standin", "object": "chat.completion", "created": 0,
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": finish_reason, "logprobs": None}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}


def response(output: list[dict[str, Any]], model: str = "gpt-standin") -> dict[str, Any]:
    return {"id": "resp_standin", "object": "response", "created_at": 0, "model": model,
            "status": "completed", "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "usage": {
                "input_tokens": 10, "output_tokens": 10, "total_tokens": 20,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0}}}
