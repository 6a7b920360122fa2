"""What :func:`mcpsync.protocol.redact.redact` hides from a log line, and what it keeps."""

from __future__ import annotations

import pytest

from mcpsync.protocol.redact import REDACTED, redact

SECRET = "eyJhbGciOiJSUzI1NiJ9.payload.sig"


@pytest.mark.parametrize("line", [
    f'"GET /mcp?access_token={SECRET} HTTP/1.1" 401 -',
    f'"GET /cb?state=x&code={SECRET}&iss=y HTTP/1.1" 200 -',
    f'"POST /mcp?page=1&client_secret={SECRET};x=1 HTTP/1.1" 400 -',
    f'"GET /mcp?access%5Ftoken={SECRET} HTTP/1.1" 401 -',  # a percent-encoded name
    f'"GET /mcp?Access-Token={SECRET} HTTP/1.1" 401 -',
    f'"GET /mcp?my_api_key={SECRET}#frag HTTP/1.1" 401 -',
    f"code 400, message Bad request syntax ('GET /mcp?token={SECRET} HTTP/1.1 x')",
    f"Authorization: Bearer {SECRET}",
    f"headers: {{'authorization': 'Basic {SECRET}'}}",
])
def test_credentials_are_replaced(line):
    redacted = redact(line)
    assert SECRET not in redacted, redacted
    assert REDACTED in redacted


def test_the_rest_of_the_line_is_kept():
    line = '127.0.0.1 - - "GET /mcp?page=2&access_token=abc&sort=name HTTP/1.1" 200 -'
    assert redact(line) == ('127.0.0.1 - - "GET /mcp?page=2&access_token=[redacted]&sort=name'
                            ' HTTP/1.1" 200 -')
    assert redact('"POST /mcp HTTP/1.1" 200 -') == '"POST /mcp HTTP/1.1" 200 -'


def test_a_urls_userinfo_is_dropped() -> None:
    assert redact("GET http://alice:s3cret@host:8000/mcp failed") == \
        "GET http://host:8000/mcp failed"
    assert redact("redis://:pw@127.0.0.1:6379/0 and https://token@example.org/x") == \
        "redis://127.0.0.1:6379/0 and https://example.org/x"
    assert redact("mailto:someone@example.org stays") == "mailto:someone@example.org stays"
