"""A small shop MCP server, written with the official Python SDK (`pip install mcp==2.3.0`),
gated by evalgate in ./evalgate.yaml.

Usage: python3 server.py            (stdio; speaks 2024-11-05 to 2026-07-28)

SHOP_RELEASE=2 in its environment plays a careless release: `quote` needs a new `currency`
argument and `list_items` is gone. The drift gate catches both against tools.lock.json.
"""
import os

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

RELEASE = os.environ.get("SHOP_RELEASE", "1")
PRICES = {"apple": 0.5, "bread": 2.25, "coffee": 7.0}
CART: dict[str, int] = {}

server = MCPServer("shop")


class Line(BaseModel):
    item: str
    qty: int
    price: float


class Quote(BaseModel):
    lines: list[Line]
    total: float


def price(item: str) -> float:
    if item not in PRICES:
        raise ToolError(f"unknown item {item!r}; the shop sells {', '.join(sorted(PRICES))}")
    return PRICES[item]


if RELEASE == "1":

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def quote(item: str, qty: int = 1) -> Quote:
        """Prices `qty` of an item."""
        line = Line(item=item, qty=qty, price=price(item))
        return Quote(lines=[line], total=round(line.price * qty, 2))

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def list_items() -> list[str]:
        """The items the shop sells."""
        return sorted(PRICES)

else:

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def quote(item: str, currency: str, qty: int = 1) -> Quote:
        """Prices `qty` of an item, in a currency."""
        line = Line(item=item, qty=qty, price=price(item))
        return Quote(lines=[line], total=round(line.price * qty, 2))


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def add_to_cart(item: str, qty: int = 1) -> str:
    """Adds `qty` of an item to the cart."""
    price(item)
    CART[item] = CART.get(item, 0) + qty
    return f"{CART[item]} {item} in the cart"


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def empty_cart() -> str:
    """Empties the cart."""
    CART.clear()
    return "the cart is empty"


if __name__ == "__main__":
    server.run()
