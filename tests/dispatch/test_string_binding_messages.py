"""The errors of string-bound parameters (prompt arguments, template variables) read as
English: "must be an int", not "must be a int"."""

from __future__ import annotations

import pytest

from mcpsync import Client, InvalidParamsError, Server


@pytest.mark.parametrize(("value", "phrase"), [("x", "'n' must be an int"),
                                                ("y", "'f' must be a float")])
def test_a_bad_number_names_its_type_with_the_right_article(value, phrase):
    server = Server("grammar")

    @server.prompt()
    def numbers(n: int, f: float) -> str:
        return f"{n} {f}"

    arguments = {"n": value, "f": "1.5"} if "'n'" in phrase else {"n": "1", "f": value}
    with Client.memory(server) as client, pytest.raises(InvalidParamsError) as caught:
        client.get_prompt("numbers", arguments)
    assert phrase in caught.value.message
