"""The Redis tests: the HTTP fixtures (``serve``: apps on real sockets), and one decision
for the whole folder when the ``redis`` library (the ``redis`` extra) is missing: its
modules are not collected, and the run's header says so in one line. In CI, where the
library must be installed (``MCPSYNC_REQUIRE_PEERS=1``), that is an error instead. The
modules can then import ``redis`` at their top like any other library."""

from __future__ import annotations

import os

import pytest

from tests.http.conftest import serve
from tests.services import REQUIRE_ENV

try:
    import redis  # noqa: F401
except ImportError:
    if os.environ.get(REQUIRE_ENV) == "1":
        raise
    collect_ignore_glob = ["test_*.py"]
    MISSING = "the Redis tests are left out: the 'redis' library is not installed " \
              "(pip install -e '.[test]')"
else:
    MISSING = None


def pytest_report_header(config: pytest.Config) -> str | None:
    return MISSING


__all__ = ["serve"]
