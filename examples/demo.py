"""The main demo: spawn the weather server over stdio and call it, blocking, no event loop.

    python examples/demo.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcpsync import Client, Progress

SERVER = Path(__file__).with_name("weather_server.py")


def main() -> int:
    with Client.stdio([sys.executable, str(SERVER)], timeout=30) as client:
        print(f"connected to {client.server_info.name} {client.server_info.version}"
              f" (protocol {client.protocol_version})")
        for tool in client.list_tools():
            print(f"  tool {tool.name}: {(tool.description or '').splitlines()[0]}")

        def show(progress: Progress) -> None:
            print(f"  progress {progress.progress}/{progress.total}: {progress.message}")

        result = client.call_tool("forecast", {"city": "Oslo", "days": 3}, on_progress=show)
        print("forecast ->", result.structured_content)
        print("cities   ->", client.call_tool("cities").structured_content)
        bad = client.call_tool("forecast", {"city": 42})
        print("bad args ->", bad.is_error, bad.text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
