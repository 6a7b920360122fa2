"""Ways to move JSON-RPC messages between two peers."""

from .base import Transport
from .memory import MemoryTransport, memory_pair

__all__ = ["MemoryTransport", "Transport", "memory_pair"]
