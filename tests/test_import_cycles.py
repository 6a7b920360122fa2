"""mcpsync's modules import each other without cycles of any kind: module-level, deferred
(function-level) and ``TYPE_CHECKING`` imports all count. ``scripts/import-cycles`` reads
them with ``ast`` and must find no circle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "import-cycles"


def test_no_import_cycles_not_even_deferred_or_type_checking_ones():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("import circles (module-level, deferred and TYPE_CHECKING imports): 0"
            in done.stdout), done.stdout
