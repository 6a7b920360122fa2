"""A minimal Django project whose WSGI application also serves MCP at /mcp."""
