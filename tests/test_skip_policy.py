"""The skip policy (``tests/helpers.py`` ``require_module``, ``tests/skip_policy.py``): a
test dependency that is not installed skips locally and fails under
``MCPSYNC_REQUIRE_PEERS=1``, naming the package; and there a skip not listed in
``tests/expected_skips.txt`` fails the run. Each is run for real: pytest in a subprocess,
with the package hidden by a stand-in that raises what a missing module raises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import spec
from tests.helpers import LONG_WAIT, REQUIRE_ENV, require_module
from tests.skip_policy import (
    EXPECTED_SKIPS,
    expected_skip_patterns,
    governed_here,
    unexpected_skips,
)

ROOT = Path(__file__).resolve().parents[1]


def _hide(tmp_path: Path, *modules: str) -> Path:
    """A directory that, first on ``PYTHONPATH``, makes ``modules`` look uninstalled."""
    hidden = tmp_path / "hidden"
    for module in modules:
        package = hidden / module
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {module!r}'!r}, name={module!r})\n")
    return hidden


def _pytest(args: list[str], *, cwd: Path, pythonpath: list[Path], require: bool
            ) -> subprocess.CompletedProcess[str]:
    """pytest in a subprocess (without pytest-xdist unless ``args`` ask for workers)."""
    env = {k: v for k, v in os.environ.items()
           if k not in (REQUIRE_ENV, "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    if require:
        env[REQUIRE_ENV] = "1"
    if "-n" not in args:
        args = ["-p", "no:xdist", *args]
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-q", "-rs", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=LONG_WAIT)


@pytest.mark.parametrize("require", [False, True], ids=["local", "ci"])
def test_a_missing_dependency_skips_locally_and_fails_in_ci_naming_it(tmp_path, require):
    # The issue's own case: gunicorn uninstalled, two files that need it.
    hidden = _hide(tmp_path, "gunicorn")
    done = _pytest(["tests/http/test_sync_worker.py", "tests/tasks/test_gunicorn_store.py"],
                   cwd=ROOT, pythonpath=[hidden, ROOT], require=require)
    out = done.stdout + done.stderr
    assert "gunicorn is not installed" in out, out
    if require:
        assert done.returncode != 0, out
        assert f"{REQUIRE_ENV}=1 forbids skipping" in out, out
    else:
        assert done.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, out  # 2 modules skipped
        assert "2 skipped" in out, out


def test_require_module_returns_the_module_and_names_the_pip_package(tmp_path, monkeypatch):
    assert require_module("json").dumps([]) == "[]"
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="PyJWT is not installed"):
        require_module("jwt.no_such_module_here", package="PyJWT")
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="no_such_dist is not installed"):
        require_module("no_such_dist.sub")


def test_an_import_error_inside_an_installed_module_is_not_a_skip(tmp_path, monkeypatch):
    (tmp_path / "broken_dep_35.py").write_text("import no_such_module_35\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_module_35"):
        require_module("broken_dep_35")


SKIPPING = '''
import pytest

def test_runs():
    pass

def test_goes_quiet():
    pytest.skip("a guard that became stale")
'''


@pytest.mark.parametrize(("require", "workers"), [(False, 0), (True, 0), (True, 2)],
                         ids=["local", "ci", "ci-xdist"])
def test_in_ci_a_skip_not_on_the_list_fails_the_run_and_is_named(tmp_path, require, workers):
    # With pytest-xdist the skips happen in the workers and the check in the controller.
    (tmp_path / "test_quiet.py").write_text(SKIPPING)
    parallel = ["-n", str(workers)] if workers else []
    done = _pytest(["-p", "tests.skip_policy", *parallel, "test_quiet.py"], cwd=tmp_path,
                   pythonpath=[ROOT], require=require)
    out = done.stdout + done.stderr
    assert "1 passed, 1 skipped" in out, out
    if require:
        assert done.returncode == 1, out
        assert "unexpected skips" in out, out
        assert "test_quiet.py::test_goes_quiet: a guard that became stale" in out, out
    else:
        assert done.returncode == 0, out
        assert "unexpected skips" not in out, out


def test_the_list_matches_by_node_id_pattern():
    patterns = ["tests/a.py::test_x[*]", "tests/b.py"]
    skipped = [("tests/a.py::test_x[1]", "r"), ("tests/a.py::test_y", "r"), ("tests/b.py", "r")]
    assert unexpected_skips(skipped, patterns) == [("tests/a.py::test_y", "r")]


def test_a_skip_for_want_of_the_spec_schemas_is_left_to_the_spec_policy():
    # A bare clone has no spec folder beside it: CI's bare-clone step runs with
    # MCPSYNC_REQUIRE_PEERS=1 but not MCPSYNC_REQUIRE_SPEC, and its one schema skip failed
    # the run as "unexpected". Any other skip is still this policy's.
    skipped = [("tests/protocol/test_method_table.py::test_the_eras_are_the_spec_schemas",
                spec.unavailable_notice()), ("tests/a.py::test_y", "a stale guard")]
    assert governed_here(skipped) == [("tests/a.py::test_y", "a stale guard")]


def test_every_expected_skip_says_why():
    lines = [line for line in EXPECTED_SKIPS.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert len(lines) == len(expected_skip_patterns())
    for line in lines:
        assert "#" in line and line.split("#", 1)[1].strip(), f"no reason given: {line!r}"
    assert len(lines) <= 20, "the list is meant to stay short: fix the skips instead"


def _test_sources() -> list[Path]:
    return [p for p in sorted((ROOT / "tests").rglob("*.py"))
            if p.name not in ("helpers.py", "test_skip_policy.py")]


def test_no_test_skips_on_a_missing_module_by_itself():
    # pytest.importorskip skips in CI too: require_module is the one policy.
    found = [f"{p.relative_to(ROOT)}:{n}" for p in _test_sources()
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "importorskip(" in line]
    assert not found, f"use tests.helpers.require_module instead of importorskip: {found}"


def test_no_test_has_a_wait_bound_of_its_own():
    # One bound, scaled by MCPSYNC_TEST_SLACK: WAIT, LONG_WAIT or slack(seconds).
    local = re.compile(r"^[A-Z_]*WAIT[A-Z_]*\s*(?::\s*float\s*)?=\s*[0-9.]+\s*(?:#.*)?$")
    found = [f"{p.relative_to(ROOT)}:{n}" for p in _test_sources()
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if local.match(line)]
    assert not found, f"import WAIT or LONG_WAIT from tests.helpers instead: {found}"
