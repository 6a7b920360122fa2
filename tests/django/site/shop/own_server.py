"""A server of the project's own, named by MCPSYNC["SERVER"] in one test: the apps'
mcp.py modules register into it instead of a default one."""

from mcpsync import Server

server = Server("own-server", version="2.0.0")
