"""Fixtures for the official MCP conformance suite (server mode)."""
