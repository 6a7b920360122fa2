"""The user's browser, played with ``requests``: sign in on the site, approve (or deny) on
the consent page, and stop at the redirect back to the client without requesting it.

It reads the forms the way a browser does (the hidden fields, the CSRF token included)
and posts them back, so a test goes through exactly what a person's browser would.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import requests

TIMEOUT = 10.0


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append((found.get("action", ""), {}))
        elif tag == "input" and self.forms and found.get("type") == "hidden":
            self.forms[-1][1][found.get("name", "")] = found.get("value", "")


def forms(page: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Forms()
    parser.feed(page)
    return parser.forms


class Browser:
    """One person's browser (its cookies) on the site."""

    def __init__(self, user: str = "alice", password: str = "secret", *,
                 stop_at: str | None = None) -> None:
        self.stop_at = stop_at  # the client's redirect URI (else: leaving the site)
        self.user = user
        self.password = password
        self.session = requests.Session()
        self.consent_pages: list[str] = []

    def get(self, url: str) -> requests.Response:
        return self.session.get(url, allow_redirects=False, timeout=TIMEOUT)

    def sign_in(self, base: str) -> None:
        """Sign in on the site's login page (as a person would before using it)."""
        answer = self.session.post(base + "/login", data={"username": self.user,
                                                          "password": self.password},
                                   allow_redirects=False, timeout=TIMEOUT)
        assert answer.status_code == 303, answer.text

    def authorize(self, url: str, *, decision: str = "allow") -> str:
        """Follow the authorization URL through login and consent; the URL the site
        sends the browser back to (the client's redirect URI with code, state, iss)."""
        here = url
        for _ in range(10):
            response = self.get(here)
            if response.status_code in (302, 303):
                target = urljoin(here, response.headers["Location"])
                if self.stop_at is not None:
                    if target.startswith(self.stop_at):
                        return target
                elif urlsplit(target).netloc != urlsplit(url).netloc:
                    return target  # leaving the site: the client's redirect URI
                here = target
                continue
            assert response.status_code in (200, 401), (response.status_code, response.text)
            if urlsplit(here).path == "/login":
                hidden = forms(response.text)[0][1]  # next, and a CSRF token if any
                answer = self.session.post(here, data={**hidden, "username": self.user,
                                                       "password": self.password},
                                           allow_redirects=False, timeout=TIMEOUT)
                assert answer.status_code in (302, 303), answer.text
                here = urljoin(here, answer.headers["Location"])
                continue
            self.consent_pages.append(response.text)
            action, fields = forms(response.text)[0]
            answer = self.session.post(urljoin(here, action),
                                       data={**fields, "decision": decision},
                                       allow_redirects=False, timeout=TIMEOUT)
            assert answer.status_code == 302, (answer.status_code, answer.text)
            return str(answer.headers["Location"])
        raise AssertionError("too many redirects")

    def __call__(self, url: str) -> str:  # an OAuth redirect_handler
        return self.authorize(url)
