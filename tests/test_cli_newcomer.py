"""What a newcomer met in the ``mcpsync`` command (issues 40 and 41), through the real
command as a subprocess: a ``KEY=VALUE`` word naming no parameter of the tool is a usage
error, a module's one ``Server`` is found whatever its name, ``mcpsync`` alone prints the
command list, and ``call`` does not say its optional ARGS is required."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.test_cli import assert_usage_error, mcpsync

CALC = textwrap.dedent("""\
    from mcpsync import Server

    calc = Server("calc")


    @calc.tool()
    def add(a: int, b: int = 0) -> int:
        return a + b


    @calc.tool()
    def ping() -> str:
        return "pong"
""")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(CALC)
    return tmp_path


def test_a_word_naming_no_parameter_is_a_usage_error(folder):
    done = mcpsync("call", "calc.py:calc", "add", "a=1", "x=y=z", cwd=folder)
    assert_usage_error(done, "x=y=z", "the tool 'add' has no parameter 'x'", "a, b")


def test_an_argument_to_a_tool_without_parameters_is_a_usage_error(folder):
    done = mcpsync("call", "calc.py:calc", "ping", "x=1", cwd=folder)
    assert_usage_error(done, "the tool 'ping' takes no arguments")


def test_known_parameters_still_work(folder):
    done = mcpsync("call", "calc.py:calc", "add", "a=1", "b=2", cwd=folder)
    assert (done.returncode, done.stdout.strip()) == (0, "3"), done.stderr


@pytest.mark.parametrize("target", ["calc.py", "calc.py:"])
def test_the_module_s_one_server_is_used_whatever_its_name(folder, target):
    done = mcpsync("tools", target, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "add" in done.stdout and "ping" in done.stdout


def test_two_servers_and_none_named_server_is_still_a_usage_error(folder):
    (folder / "two.py").write_text(CALC + 'other = Server("other")\n')
    done = mcpsync("tools", "two.py", cwd=folder)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "two.py has no attribute 'server' (it has: calc, other)" in done.stderr


def test_mcpsync_alone_prints_the_command_list():
    done = mcpsync()
    assert done.returncode == 0, done.stderr
    assert "mcpsync call TARGET TOOL" in done.stdout
    assert "mcpsync inspect TARGET" in done.stdout
    assert done.stderr == ""


def test_call_does_not_say_its_optional_args_are_required():
    done = mcpsync("call")
    assert_usage_error(done, "required: target, tool")
    assert "ARGS" not in done.stderr
    done = mcpsync("prompt")
    assert "ARGS" not in done.stderr
