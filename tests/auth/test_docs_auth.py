"""Every Python example of docs/auth.md runs, against the test authorization server and a
protected MCP endpoint (its placeholder URL replaced), the person at the keyboard played
by ``requests``."""

from __future__ import annotations

import re
import threading
import webbrowser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcpsync import FollowRedirects
from mcpsync.auth.oauth import DEFAULT_REDIRECT_URI as REDIRECT_DEFAULT

from .authserver import AuthServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "auth.md"
PLACEHOLDER = "https://mcp.example.com/mcp"
# The client examples: the resource-server section runs in test_resource_server.py.
BLOCKS = re.findall(r"```python\n(.*?)```",
                    DOC.read_text().split("\n## Protecting a server")[0], re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 5 and all(PLACEHOLDER in block for block in BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index: int, auth_server: AuthServer, protect: Any, tmp_path: Path,
                      request: pytest.FixtureRequest,
                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    key = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "service-key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    auth_server.jwt_keys["my-service"] = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    auth_server.clients.update({"my-app": "my-app-secret",
                                "my-service": "my-service-secret"})
    (tmp_path / "workload-token.jwt").write_text("workload.jwt.value\n")
    idp = AuthServer()  # the enterprise IdP of the SEP-990 example
    request.addfinalizer(idp.stop)
    idp.id_tokens.add("eyJ...the user's ID token...")
    auth_server.trusted_idp = idp
    auth_server.clients["mcp-client"] = "mcp-client-secret"
    auth_server.workload_jwts.add("workload.jwt.value")
    mcp = protect()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    opened: list[str] = []
    visits: list[threading.Thread] = []

    def browser(url: str, new: int = 0) -> bool:
        """Record the URL; when a loopback listener waits for it, go there as a browser."""
        opened.append(url)
        if quote(REDIRECT_DEFAULT, safe="") not in url:
            visit = threading.Thread(target=requests.get, args=(url,),
                                     kwargs={"timeout": 10.0}, name="test-docs-browser")
            visits.append(visit)
            visit.start()
        return True

    monkeypatch.setattr(webbrowser, "open", browser)
    # The user pastes the URL the browser ended on: the last redirect's target.
    monkeypatch.setattr("builtins.input", lambda prompt="": FollowRedirects()(opened[-1]))

    code = BLOCKS[index].replace(PLACEHOLDER, mcp.url).replace(
        "https://idp.example.com/token", f"{idp.issuer}/token")
    exec(compile(code, f"auth.md[{index}]", "exec"),
         {"__name__": "__docs__"})

    for visit in visits:
        visit.join(15.0)
    out = capsys.readouterr()
    assert out.out.strip(), "the example printed nothing"
    assert not out.out.lstrip().startswith(("401", "403"))  # plain requests: not refused
    if "FileTokenStorage" in BLOCKS[index]:
        assert (tmp_path / ".config" / "my-notebook" / "tokens.json").exists()
