"""The host applications that run MCP servers (Claude Desktop, Claude Code, Cursor, VS
Code): where each keeps its servers, per user and per project (:mod:`.registry`), writing
an entry into one (:mod:`.install`, ``mcpsync install``) and reading what they hold
(:mod:`.discover`, ``mcpsync discover`` and ``HOST:NAME`` targets)."""

from .discover import Configured, Discovered, discover, find, is_host_target
from .install import Installed, install, server_entry, write_entry
from .registry import (
    HOME_VARIABLE,
    HOSTS,
    PROJECT_FILES,
    Host,
    HostError,
    config_path,
    host,
    present,
    project_folders,
    project_paths,
)

__all__ = ["HOME_VARIABLE", "HOSTS", "PROJECT_FILES", "Configured", "Discovered", "Host",
           "HostError", "Installed", "config_path", "discover", "find", "host", "install",
           "is_host_target", "present", "project_folders", "project_paths", "server_entry",
           "write_entry"]
