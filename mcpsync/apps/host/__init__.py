"""The host side of MCP Apps: fetch a tool's view, and show it behind a sandbox with the
bridge the revision defines (the preview page; the notebook widget uses the same bridge).
"""

from __future__ import annotations

from .bridge import Bridge
from .csp import CspError, allow_attribute, policy, with_policy
from .page import Preview
from .preview import PreviewServers, preview_of
from .view import View, ViewError, fetch_view, find_tool, tools_with_views

__all__ = ["Bridge", "CspError", "Preview", "PreviewServers", "View", "ViewError",
           "allow_attribute", "fetch_view", "find_tool", "policy", "preview_of",
           "tools_with_views", "with_policy"]
