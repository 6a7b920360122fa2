"""A handshake-era stdio server without mcpsync, for the caller-reads tests: it writes
exactly the bytes each case needs, in the order it needs them.

Tools (their one argument is ``text``, but for ``silent``):

* ``echo``: the text back;
* ``nudge_same``: the answer and a log notification in *one* write (the notification is
  read with the answer, and waits in the client's buffer);
* ``nudge_after``: the answer, then a log notification in a second write 50 ms later (it
  arrives when no call is pending);
* ``ask``: asks the client ``roots/list`` before answering, and answers with how many
  roots it got;
* ``steps``: three progress notifications, then the answer;
* ``silent``: never answers (but writes ``started`` to the file ``marker``, if given);
* ``die``: writes a line to stderr and exits with status 3.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

VERSION = "2025-11-25"


def line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def answer(message_id: object, text: str) -> bytes:
    return line({"id": message_id, "result": {"content": [{"type": "text", "text": text}]}})


def log(text: str) -> bytes:
    return line({"method": "notifications/message",
                 "params": {"level": "info", "logger": "lending", "data": text}})


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def main() -> None:
    stdin = sys.stdin.buffer
    while True:
        raw = stdin.readline()
        if not raw:
            return
        message = json.loads(raw)
        method, message_id = message.get("method"), message.get("id")
        if message_id is None or method is None:
            continue  # notifications, and answers we did not wait for
        if method == "initialize":
            write(line({"id": message_id, "result": {
                "protocolVersion": VERSION, "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "lending", "version": "1"}}}))
        elif method == "tools/list":
            write(line({"id": message_id, "result": {"tools": [
                {"name": name, "inputSchema": {"type": "object"}} for name in
                ("echo", "nudge_same", "nudge_after", "ask", "steps", "silent", "die")]}}))
        elif method == "tools/call":
            params = message["params"]
            name, text = params["name"], params.get("arguments", {}).get("text", "")
            if name == "echo":
                write(answer(message_id, text))
            elif name == "nudge_same":
                write(answer(message_id, text) + log(f"after {text}"))
            elif name == "nudge_after":
                write(answer(message_id, text))
                time.sleep(0.05)  # the server's own pacing: the client is idle by then
                write(log(f"after {text}"))
            elif name == "ask":
                write(line({"id": "roots-1", "method": "roots/list"}))
                reply = json.loads(stdin.readline())
                write(answer(message_id, str(len(reply["result"]["roots"]))))
            elif name == "steps":
                token = params["_meta"]["progressToken"]
                for step in (1, 2, 3):
                    write(line({"method": "notifications/progress", "params": {
                        "progressToken": token, "progress": step, "total": 3}}))
                write(answer(message_id, "stepped"))
            elif name == "silent" and params.get("arguments", {}).get("marker"):
                with open(params["arguments"]["marker"], "w") as f:
                    f.write("started")
            elif name == "die":
                sys.stderr.write("lending: dying on purpose\n")
                sys.stderr.flush()
                sys.exit(3)
            # "silent": no answer at all
        else:
            write(line({"id": message_id, "result": {}}))


if __name__ == "__main__":
    main()
