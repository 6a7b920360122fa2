"""How the app reads a request's headers out of the WSGI environ: the same names as
before the lookup table, whatever else the server puts in the environ, and a table that
stays bounded however many header names clients invent."""

from __future__ import annotations

import os

from mcpsync.http import intake as wsgi_environ
from mcpsync.http.wsgi import request_headers

from .raw import post_modern


def test_headers_from_environ_ignore_everything_else():
    environ = dict(os.environ)  # granian copies the process environment into each environ
    environ.update({"REQUEST_METHOD": "POST", "HTTP_HOST": "127.0.0.1:8000",
                    "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28", "HTTP_X_WEIRD__NAME": "1",
                    "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": "12",
                    "wsgi.input": object(), "SERVER_NAME": "localhost"})
    for _ in range(2):  # translated the first time, looked up the second
        assert request_headers(environ) == {
            "host": "127.0.0.1:8000", "mcp-protocol-version": "2026-07-28",
            "x-weird--name": "1", "content-type": "application/json",
            "content-length": "12",
            **{k[5:].replace("_", "-").lower(): v for k, v in os.environ.items()
               if k.startswith("HTTP_")}}


def test_the_name_table_is_bounded(url):
    long_name = "HTTP_X_" + "L" * 100_000  # as long as a server lets a header name be
    assert request_headers({long_name: "v"}) == {long_name[5:].replace("_", "-").lower(): "v"}
    assert long_name not in wsgi_environ._HEADER_NAMES  # remembered names are short ones only
    for i in range(wsgi_environ._MAX_HEADER_NAMES + 100):
        request_headers({f"HTTP_X_INVENTED_{i}": "v"})
    assert len(wsgi_environ._HEADER_NAMES) <= wsgi_environ._MAX_HEADER_NAMES
    assert all(len(key) <= wsgi_environ._MAX_CACHED_KEY for key in wsgi_environ._HEADER_NAMES)
    # Past the bound, names are still read (translated each time), and requests work.
    assert request_headers({"HTTP_X_ONE_MORE_NAME": "v"}) == {"x-one-more-name": "v"}
    answer = post_modern(url, "tools/call", {"name": "echo", "arguments": {"text": "hi"}},
                         headers={"X-Yet-Another": "1"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["content"][0]["text"] == "hi"
