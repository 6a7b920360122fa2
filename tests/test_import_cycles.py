"""mcpsync's modules import each other without cycles, deferred (function-level) ones
included: ``scripts/import-cycles`` reads them with ``ast`` and must find none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "import-cycles"


def test_no_import_cycles_not_even_deferred_ones():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "module-level import cycles: 0" in done.stdout
    assert "cycles that need a deferred (function-level) import: 0" in done.stdout, done.stdout
