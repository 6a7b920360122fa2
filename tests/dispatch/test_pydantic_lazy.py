"""pydantic is looked up, never imported, by mcpsync: a program that imported only the
top-level package (its submodules load lazily) can still register tools."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import pydantic
import mcpsync
assert "pydantic.fields" not in sys.modules  # the case under test
server = mcpsync.Server("s")

@server.tool()
def scaled(a: int = 1, factor: float = 2.0) -> float:
    return a * factor

with mcpsync.Client.memory(server) as client:
    assert client.call_tool("scaled", {"a": 3}).structured_content == {"result": 6.0}
"""


def test_tools_with_defaults_register_when_pydantic_fields_is_not_loaded():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
