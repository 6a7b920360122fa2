"""The README's test command on a bare clone: a copy of the repository with nothing beside
it (no ``../shared/spec``) must pass, skipping only the JSON Schema assertions and saying so
once; with ``MCPSYNC_REQUIRE_SPEC=1`` (CI) the same copy must refuse to run.

The copy is the tracked files (``git ls-files``), or, where this checkout is itself not a
git clone, the tree without caches and virtual environments. ``pip install`` and
``scripts/install-peers`` are not repeated here: this runs the ``python -m pytest`` step
on a small subset that validates wire messages against the schemas.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import spec

ROOT = Path(__file__).resolve().parents[1]
#: Tests that call tests.spec.validate / validate_message (in this process and in threads).
SUBSET = ["tests/protocol/test_jsonrpc.py", "tests/server/test_stateless.py"]
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache",
              ".mypy_cache", ".ruff_cache", ".hypothesis"}


def copy_checkout(destination: Path) -> None:
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if listed.returncode == 0 and listed.stdout:
        names = [n for n in listed.stdout.decode().split("\0") if n]
    else:
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not _SKIP_DIRS & set(p.relative_to(ROOT).parts)]
    for name in names:
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the work tree is not copied
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("bare") / "mcpsync"
    copy_checkout(copy)
    assert not (copy.parent / "shared").exists()
    return copy


def pytest_in(copy: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items()
               if k not in (spec.SPEC_ENV, spec.REQUIRE_ENV, "PYTEST_ADDOPTS")}
    environ.update(env, PYTHONPATH=str(copy))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *SUBSET],
                          cwd=copy, env=environ, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_the_test_command_passes_on_a_bare_clone_and_says_once_what_it_skipped(bare):
    done = pytest_in(bare)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    notice = f"spec schemas not found at {bare.parent / 'shared' / 'spec'}"
    assert output.count(notice) == 1, output[:3000]
    header = output.split("collected", 1)[0]
    assert notice in header  # at the top of the run, not buried in the log
    assert " passed" in output and " failed" not in output and " error" not in output
    assert "skipped" not in output  # only the schema assertions are skipped, no test


def test_ci_refuses_to_run_without_the_schemas(bare):
    done = pytest_in(bare, **{spec.REQUIRE_ENV: "1"})
    assert done.returncode == 4  # pytest's usage error: before any test runs
    assert f"{spec.REQUIRE_ENV}=1" in done.stderr
    assert str(bare.parent / "shared" / "spec") in done.stderr
    assert "Traceback" not in done.stderr


def test_an_explicit_spec_dir_that_is_missing_is_an_error(bare, tmp_path):
    done = pytest_in(bare, **{spec.SPEC_ENV: str(tmp_path / "nowhere")})
    assert done.returncode == 4
    assert str(tmp_path / "nowhere") in done.stderr


def test_with_the_schemas_the_copy_validates(bare):
    if not spec.available():
        pytest.skip("this run has no spec schemas to point the copy at")
    done = pytest_in(bare, **{spec.SPEC_ENV: str(spec.SPEC_DIR), spec.REQUIRE_ENV: "1"})
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    assert "spec schemas not found" not in output


#: A path that names the folder beside the checkout: ``/ "shared"``, ``"shared" /``,
#: ``"../shared"``, or climbing above the repository root with ``parents[N].parent``
#: (a method or key that happens to be called "shared" is not a path).
_CLIMBS_OUT = re.compile(r"""/\s*["']shared["']|["']shared["']\s*/|\.\./shared"""
                         r"""|parents\[\d\]\.parent""")


def test_no_test_reads_a_folder_outside_the_repository():
    """The class of bug: a path that climbs out of the checkout (``../shared``), anywhere in
    tests/ or benchmarks/, other than the one optional, announced read in tests/spec.py."""
    # The check can fail: it finds the one read it allows.
    assert _CLIMBS_OUT.search((ROOT / "tests" / "spec.py").read_text(encoding="utf-8"))
    offenders = []
    for folder in ("tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            if path == ROOT / "tests" / "spec.py" or path == Path(__file__).resolve():
                continue
            text = path.read_text(encoding="utf-8")
            if _CLIMBS_OUT.search(text):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
