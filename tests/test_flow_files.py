"""docs/architecture.md lists the files each of its two flows runs through; they are
measured here (``scripts/flow-files``), so the map can not drift from the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"


def documented(flow: str) -> set[str]:
    """The files listed in the doc's ``<!-- flow-files FLOW -->`` block."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(rf"<!-- flow-files {flow} -->\n```text\n(.*?)```", text, re.S)
    assert block is not None, f"no flow-files {flow} block in {DOC}"
    files = set()
    for line in block.group(1).splitlines():
        package, *names = line.split()
        prefix = "" if package == "." else package
        files.update(prefix + name for name in names)
    return files


def measured(flow: str) -> tuple[str, set[str]]:
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "flow-files"), flow, "--list"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    first, *rest = run.stdout.splitlines()
    return first, {line.strip() for line in rest}


@pytest.mark.parametrize("flow", ["http", "stdio"])
def test_the_documented_files_are_the_measured_ones(flow: str) -> None:
    summary, files = measured(flow)
    listed = documented(flow)
    assert files == listed, (f"measured but not in the doc: {sorted(files - listed)}; "
                             f"in the doc but not run: {sorted(listed - files)}")
    count = int(summary.split()[1])
    assert count == len(files)
    heading = re.search(rf"\*\*Files passed through: (\d+), in (\d+) packages\*\* "
                        rf"\(`scripts/flow-files {flow} --list`", DOC.read_text("utf-8"))
    assert heading is not None and int(heading.group(1)) == count, summary
    assert int(heading.group(2)) == int(summary.split()[4]), summary
