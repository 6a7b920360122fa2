"""A server for the hostile-input tests run on every transport (memory, stdio, HTTP in
both eras): a resource template whose variables could share characters, and a tool that
reports whether the code the garbage collector ran had stack left.

Run as a script it serves stdio; with ``MCPSYNC_STACK_PROBE=1`` it serves under
``tests.helpers.stack_probe`` (collections at every allocation, each recording whether
300 frames of stack were left), which the ``headroom`` tool reads back.
"""

from __future__ import annotations

import os

from mcpsync import ProtocolOptions, Server
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("hostile", version="1.0.0",
                protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS))
_records: list[bool] = []


@server.resource("pair://{a,b,c}")
def pair(a: str, b: str, c: str) -> str:
    """Three values from one expression."""
    return f"{a}|{b}|{c}"


@server.tool()
def headroom() -> bool:
    """Whether every collection since the probe was installed had stack left (and there
    was at least one)."""
    return bool(_records) and all(_records)


if __name__ == "__main__":
    if os.environ.get("MCPSYNC_STACK_PROBE") == "1":
        from tests.helpers import stack_probe

        with stack_probe() as records:
            _records = records
            server.run_stdio()
    else:
        server.run_stdio()
