"""The official Python SDK's OAuth client (mcp 2.3.0) against examples/oauth_site.py run as
a subprocess: registration (dynamic, and a client ID metadata document), the user's
login and consent, a tool call in both eras, a refresh and a revocation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interop.peers import official_python, require
from tests.serving import ROOT, RunningServer, free_port, serving_process

from .oauth_steps import REDIRECT_URI
from .test_example_site import SECRET, example_site  # noqa: F401 (a fixture)

SCRIPT = str(Path(__file__).with_name("official_client.py"))


def run(url: str, mode: str, registration: str, user: str) -> dict[str, object]:
    python = require(official_python)
    proc = subprocess.run([python, SCRIPT, url, mode, registration, user],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    report: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["ok"], (report, proc.stderr[-3000:])
    return report


@pytest.mark.interop
@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_official_client_dynamic_registration(example_site: str, mode: str) -> None:  # noqa: F811
    report = run(example_site + "/mcp", mode, "dcr", "alice")
    assert str(report["text"]).startswith("You are Alice (user alice)")
    assert (report["refreshed"], report["revoked"], report["after_revocation"]) == (200, 200, 400)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 (cert path, key path), made by openssl."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"openssl cannot make a test certificate: {exc}")
    return cert, key


@pytest.fixture
def https_document(certificate: tuple[str, str]) -> Iterator[str]:
    """A client ID metadata document at an https URL (the official client requires one),
    served with the test certificate."""
    document: dict[str, Any] = {}

    def serve(environ: dict[str, Any], start: Any) -> list[bytes]:
        start("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(document).encode()]

    with RunningServer(serve, ssl_context=certificate) as host:
        url = host.base + "/oauth/client.json"
        document.update(client_id=url, client_name="Official Document Client",
                        redirect_uris=[REDIRECT_URI], application_type="native",
                        grant_types=["authorization_code", "refresh_token"],
                        token_endpoint_auth_method="none")
        yield url


@pytest.fixture
def site_trusting(certificate: tuple[str, str]) -> Iterator[str]:
    """The example site as a subprocess, trusting the test certificate (its metadata
    document fetches verify TLS against the CA file the environment names)."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), OAUTH_SITE_SECRET=SECRET,
               SSL_CERT_FILE=certificate[0])
    argv = [sys.executable, "examples/oauth_site.py", "--port", str(port),
            "--allow-loopback-clients"]
    with serving_process(argv, port, cwd=ROOT, env=env) as base:
        yield base


@pytest.mark.interop
def test_official_client_metadata_document(site_trusting: str, https_document: str) -> None:
    report = run(site_trusting + "/mcp", "modern", https_document, "bob")
    assert str(report["text"]).startswith("You are Bob (user bob)")
    assert report["client_id"] == https_document
    assert (report["refreshed"], report["revoked"], report["after_revocation"]) == (200, 200, 400)
