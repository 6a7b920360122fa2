"""A handshake-era stdio server without mcpsync that stops reading its stdin once the
client is connected, for the write-deadline tests: the client's writes then fill the pipe
and can not go on.

    python deaf_server.py [--pipe-size N] [--resume-on-usr1]

It answers ``initialize``, reads ``notifications/initialized``, writes ``deaf`` on a line
of stderr and then reads nothing more. ``--pipe-size N`` shrinks its stdin pipe to N bytes
first (Linux: the kernel rounds it up to a page), so that one message fills it.
``--resume-on-usr1``: on SIGUSR1 it reads again, answers each ``tools/call`` with how many
calls it has seen (``calls seen: N``) and writes ``resumed`` on stderr; otherwise it waits
until it is killed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys


def answer(message_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def main() -> None:
    # Blocked from the start, so a SIGUSR1 sent as soon as "deaf" is seen is not lost.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    parser = argparse.ArgumentParser()
    parser.add_argument("--pipe-size", type=int, default=0)
    parser.add_argument("--resume-on-usr1", action="store_true")
    args = parser.parse_args()
    if args.pipe_size:
        import fcntl

        fcntl.fcntl(0, fcntl.F_SETPIPE_SZ, args.pipe_size)
    stdin = sys.stdin.buffer
    while True:
        raw = stdin.readline()
        if not raw:
            return
        message = json.loads(raw)
        if message.get("method") == "initialize":
            answer(message["id"], {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "deaf", "version": "0"},
            })
        elif message.get("method") == "notifications/initialized":
            break
    say("deaf")
    if not args.resume_on_usr1:
        while True:
            signal.pause()  # SIGTERM (the default action) ends it
    signal.sigwait({signal.SIGUSR1})
    say("resumed")
    calls = 0
    while raw := stdin.readline():
        message = json.loads(raw)
        if message.get("method") == "tools/call":
            calls += 1
            answer(message["id"], {"content": [{"type": "text",
                                                "text": f"calls seen: {calls}"}]})
        elif message.get("method") == "ping":
            answer(message["id"], {})


if __name__ == "__main__":
    main()
