"""The sans-IO core: framing, JSON-RPC, era rules and bookkeeping.

Nothing in this package touches threads, sockets, clocks or files; every piece is a pure
function or a small state object that the engine drives. That is what makes it testable
message by message, and reusable by any transport.
"""
