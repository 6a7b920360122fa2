"""A handshake-era stdio MCP server written without mcpsync, to misbehave on purpose.

    python raw_server.py [--stderr-bytes N] [--die-on-call STATUS] [--kill-on-initialize]

``--stderr-bytes N`` writes N bytes of stderr (80-byte lines) before answering
``initialize``; ``--die-on-call STATUS`` writes a last line to stderr and exits with STATUS
when a tool is called; ``--kill-on-initialize`` writes a line to stderr and kills itself
with SIGKILL when ``initialize`` arrives. It has one tool, ``ping_tool``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys


def answer(message_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stderr-bytes", type=int, default=0)
    parser.add_argument("--die-on-call", type=int, default=None)
    parser.add_argument("--kill-on-initialize", action="store_true")
    args = parser.parse_args()
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            if args.kill_on_initialize:
                sys.stderr.write("raw_server: about to be killed\n")
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            line80 = b"x" * 79 + b"\n"
            left = args.stderr_bytes
            while left > 0:
                chunk = (line80 * 1024)[:left]
                left -= os.write(2, chunk)  # blocks while the pipe is full
            answer(message["id"], {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "0"},
            })
        elif method == "tools/list":
            answer(message["id"], {"tools": [
                {"name": "ping_tool", "inputSchema": {"type": "object"}}]})
        elif method == "tools/call":
            if args.die_on_call is not None:
                sys.stderr.write("raw_server: fatal: the tool crashed\n")
                sys.stderr.flush()
                os._exit(args.die_on_call)
            answer(message["id"], {"content": [{"type": "text", "text": "pong"}]})
        elif method == "ping":
            answer(message["id"], {})


if __name__ == "__main__":
    main()
