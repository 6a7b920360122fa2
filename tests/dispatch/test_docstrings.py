"""Parameter descriptions from NumPy- and reST-style docstrings, as from Google style."""

from __future__ import annotations

import pytest

from mcpsync import Client, Server
from mcpsync.dispatch.typed import ToolBinding, parse_docstring

NUMPY = """Forecast a city.

More text.

Parameters
----------
city : str
    Which city.
days : int, optional
    How many
    days ahead.
x, y : float
    A point.

Returns
-------
str
    The forecast.
"""

REST = """Forecast a city.

:param city: Which city.
:type city: str
:param int days: How many
    days ahead.
:param x: A point.
:param y: A point.
:returns: the forecast
:rtype: str
"""

GOOGLE = """Forecast a city.

Args:
    city: Which city.
    days: How many
        days ahead.
    x: A point.
    y: A point.

Returns:
    The forecast.
"""

EXPECTED = {"city": "Which city.", "days": "How many days ahead.", "x": "A point.",
            "y": "A point."}


@pytest.mark.parametrize("doc", [NUMPY, REST, GOOGLE], ids=["numpy", "rest", "google"])
def test_every_style_gives_the_same_descriptions(doc: str) -> None:
    summary, params = parse_docstring(doc)
    assert summary is not None and summary.startswith("Forecast a city.")
    assert "Parameters" not in summary and ":param" not in summary
    assert params == EXPECTED


def test_numpy_and_rest_descriptions_reach_tools_and_prompts() -> None:
    def forecast(city: str, days: int = 1, x: float = 0, y: float = 0) -> str:
        return city

    forecast.__doc__ = NUMPY
    props = ToolBinding.from_function(forecast).input_schema["properties"]
    assert {k: v["description"] for k, v in props.items()} == EXPECTED

    server = Server("docs")

    def review(city: str, days: str = "1") -> str:
        return city

    review.__doc__ = REST
    server.prompt()(review)
    with Client.memory(server) as client:
        prompt = client.list_prompts()[0]
    assert prompt.description == "Forecast a city."
    assert {a.name: a.description for a in prompt.arguments} == {
        "city": "Which city.", "days": "How many days ahead."}
