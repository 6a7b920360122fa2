"""A client over several servers, from the ``mcpServers`` configuration a host keeps:
``Client.from_config(...)`` returns a :class:`Hub` (:mod:`.hub`); :mod:`.config` reads
the configuration (JSON with comments, the Claude/Cursor ``mcpServers`` and VS Code
``servers`` shapes, ``${VAR}`` expansion)."""

from .config import ConfigError, ServerEntry
from .hub import Hub, ServerUnavailableError

__all__ = ["ConfigError", "Hub", "ServerEntry", "ServerUnavailableError"]
