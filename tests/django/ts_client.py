"""Run the TypeScript SDK's client (``ts_users_client.mjs``) against a framework site's MCP
endpoint as one user; its report (the tools it is shown, what ``whoami`` answers)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import WAIT
from tests.interop import peers

SCRIPT = Path(__file__).with_name("ts_users_client.mjs")


def ts_client(url: str, token: str) -> dict[str, Any]:
    """Connect as the user of DRF/Flask-Login token ``token``; skips without the peer."""
    node = peers.require(peers.node22)
    sdk = str(peers.peers_dir().joinpath("npm", "node_modules", "@modelcontextprotocol",
                                         "sdk"))
    peers.require(lambda: peers._existing(Path(sdk) / "dist" / "esm" / "client" /
                                          "streamableHttp.js", "@modelcontextprotocol/sdk"))
    proc = subprocess.run([node, str(SCRIPT), sdk, url, "Authorization", f"Token {token}"],
                          capture_output=True, text=True, timeout=WAIT * 2,
                          env=peers.node_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report
