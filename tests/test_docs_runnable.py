"""The docs' runnable examples run: every ```python block between ``<!-- runnable: NAME -->``
and ``<!-- /runnable -->`` in docs/*.md is executed in a fresh interpreter and must exit 0
(its asserts are the test)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import require_module

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"<!-- runnable: ([\w-]+) -->\s*```python\n(.*?)```\s*<!-- /runnable -->",
                    re.S)


def _examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for name, code in _BLOCK.findall(page.read_text(encoding="utf-8")):
            found.append((f"{page.name}:{name}", code))
    return found


EXAMPLES = _examples()


def test_the_server_guide_has_runnable_examples() -> None:
    assert {"server.md:async", "server.md:types", "server.md:media"} <= {n for n, _ in EXAMPLES}


@pytest.mark.parametrize(("name", "code"), EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_example_runs(name: str, code: str) -> None:
    if "pydantic" in code:
        require_module("pydantic")
    with contextlib.ExitStack() as stack:
        env = dict(os.environ)
        if "REDIS_URL" in code:  # an example written as an app: its Redis comes from the env
            from tests.services import RedisServer, require_redis_library

            require_redis_library()
            env["REDIS_URL"] = stack.enter_context(RedisServer()).url
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, env=env)
    assert done.returncode == 0, f"{name} failed:\n{done.stderr}"
