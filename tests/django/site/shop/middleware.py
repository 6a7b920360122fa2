"""A header-based RemoteUserMiddleware (X-Remote-User, as a proxy in front would set it)
and a backend that knows only existing users."""

from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware


class HeaderRemoteUserMiddleware(RemoteUserMiddleware):
    header = "HTTP_X_REMOTE_USER"


class KnownRemoteUserBackend(RemoteUserBackend):
    create_unknown_user = False
