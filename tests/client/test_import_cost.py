"""A program that only uses the client does not import the server's schema validator."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import mcpsync
assert "jsonschema" not in sys.modules, "import mcpsync pulled in jsonschema"
server = mcpsync.Server("s")

@server.tool()
def add(a: int, b: int) -> int:
    return a + b

assert "jsonschema" in sys.modules  # compiled when the first tool is registered
"""


def test_jsonschema_is_imported_with_the_first_tool_not_with_mcpsync():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
