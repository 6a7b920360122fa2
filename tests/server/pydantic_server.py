"""A server whose tools take and return pydantic models and constrained ``Annotated``
parameters; used by tests/server/test_pydantic_types.py over memory and stdio."""

from __future__ import annotations

import datetime
from typing import Annotated

import annotated_types as at
from pydantic import BaseModel, Field

from mcpsync import ProtocolOptions, Server
from mcpsync.protocol.versions import MODERN_VERSIONS

server = Server("pydantic", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                request_state_key="pyd-key")


class Item(BaseModel):
    sku: str
    count: int = Field(ge=1, description="How many of it")


class Order(BaseModel):
    id: int
    placed: datetime.datetime
    items: list[Item] = []


@server.tool()
def place(order: Order,
          discount: Annotated[int, Field(ge=0, le=50, description="Percent off")] = 0,
          note: Annotated[str, at.MinLen(2), at.MaxLen(10)] = "ok",
          even: Annotated[int, at.Predicate(lambda n: n % 2 == 0)] = 0,
          extra: int = Field(1, gt=0, description="Extra units")) -> Order:
    """Place an order; the function gets an ``Order`` instance."""
    assert isinstance(order, Order) and all(isinstance(i, Item) for i in order.items)
    items = [Item(sku=i.sku, count=i.count + extra) for i in order.items]
    return Order(id=order.id + discount + len(note) + even, placed=order.placed, items=items)


if __name__ == "__main__":
    server.run_stdio()
