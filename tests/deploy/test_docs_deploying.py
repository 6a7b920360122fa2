"""docs/deploying.md shows the nginx configuration the deploy tests run: one source of
truth (``examples/deploy/nginx.conf.template``), so the page cannot drift from it."""

from __future__ import annotations

import re
from pathlib import Path

from .topology import TEMPLATE, render_nginx_conf

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "deploying.md"


def test_the_page_shows_the_template_the_tests_run():
    page = PAGE.read_text(encoding="utf-8")
    shown = re.search(r"<!-- nginx-template -->\s*```nginx\n(.*?)```\s*<!-- /nginx-template -->",
                      page, re.S)
    assert shown is not None, "docs/deploying.md lost its nginx-template block"
    assert shown.group(1) == TEMPLATE.read_text(encoding="utf-8")


def test_every_placeholder_is_filled(tmp_path):
    conf = render_nginx_conf(tmp_path, "127.0.0.1:8080", ["127.0.0.1:8001", "127.0.0.1:8002"])
    assert "{{" not in conf and "}}" not in conf
    assert conf.count("server 127.0.0.1:800") == 2
    # The choices the page explains are all there.
    for line in ("proxy_buffering off;", "proxy_http_version 1.1;",
                 'proxy_set_header Connection "";', "proxy_read_timeout 3600s;",
                 "proxy_next_upstream error timeout;", "proxy_set_header Host $http_host;"):
        assert line in conf
    # Never re-send a POST that reached an instance; no stickiness; no pooled connections.
    directives = [line.split("#")[0] for line in conf.splitlines()]
    assert not any("non_idempotent" in d for d in directives)
    assert not any(re.match(r"\s*(keepalive \d|ip_hash|hash |sticky)", d) for d in directives)
