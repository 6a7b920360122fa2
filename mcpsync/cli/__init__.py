"""The ``mcpsync`` command.

:mod:`~mcpsync.cli.main` parses the command line and serves; :mod:`~mcpsync.cli.surface` holds
the client subcommands (``tools``, ``call``, ``read``…), :mod:`~mcpsync.cli.target` turns a
TARGET (a file, a module, a URL or a command) into a server or a client, and the rest format
what they print.
"""

from .main import HELP, main

__all__ = ["HELP", "main"]
