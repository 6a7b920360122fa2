"""A header-based RemoteUserMiddleware (X-Remote-User, as a proxy in front would set it)
and a backend that knows only existing users."""

from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware


class HeaderRemoteUserMiddleware(RemoteUserMiddleware):
    header = "HTTP_X_REMOTE_USER"


class KnownRemoteUserBackend(RemoteUserBackend):
    create_unknown_user = False


class PeekBodyMiddleware:
    """Reads the request body before the view when asked (X-Peek), as an audit or
    signature-checking middleware would: the endpoint must still get the body."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.headers.get("X-Peek"):
            request.peeked = len(request.body)
        return self.get_response(request)
