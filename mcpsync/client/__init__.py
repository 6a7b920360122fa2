"""The blocking MCP client."""

from .client import Client

__all__ = ["Client"]
