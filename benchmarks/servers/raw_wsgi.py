"""Raw floor for HTTP: a minimal WSGI app answering a fixed JSON-RPC body (gunicorn gthread)."""

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":false}}'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def app(environ, start_response):
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("200 OK", HEADERS)
    return [BODY]
