"""A small stdio MCP server: plain blocking functions as tools.

Run it under any MCP host, or drive it with examples/demo.py:

    python examples/weather_server.py
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpsync import HandlerContext, Server

server = Server("weather", version="1.0.0", instructions="Forecasts for a few cities.")

_TEMPERATURES = {"oslo": 4.0, "lisbon": 19.5, "nairobi": 24.0}


@dataclass
class Forecast:
    city: str
    days: int
    temperatures: list[float]


@server.tool()
def forecast(ctx: HandlerContext, city: str, days: int = 3) -> Forecast:
    """Forecast the daily temperature of a city.

    Args:
        city: The city, e.g. "Oslo".
        days: How many days ahead (1-7).
    """
    base = _TEMPERATURES.get(city.lower(), 15.0)
    temperatures = []
    for day in range(days):
        ctx.check_cancelled()  # stop promptly if the caller gave up
        ctx.progress(day + 1, total=days, message=f"day {day + 1}")
        temperatures.append(round(base + day * 0.5, 1))
    return Forecast(city=city, days=days, temperatures=temperatures)


@server.tool()
def cities() -> list[str]:
    """The cities with known weather."""
    return sorted(_TEMPERATURES)


@server.tool()
def wait(ctx: HandlerContext, seconds: float) -> str:
    """Block for a while (cancellable): shows that a slow tool never stalls the others."""
    ctx.sleep(seconds)
    return f"waited {seconds} s"


if __name__ == "__main__":
    server.run_stdio()
