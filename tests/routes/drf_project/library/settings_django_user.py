"""The DRF project of the routes tests, as a project that serves MCP with mcpsync.django
would run it: the caller's Django user forwarded into in-process calls
(``forward_identity="django"``) through the two adapters the docs name."""

from library.settings import *  # noqa: F403

ROOT_URLCONF = "library.urls_django_user"
MIDDLEWARE = [
    "django.middleware.common.CommonMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "mcpsync.routes.django_user.InProcessUserMiddleware",
]
INSTALLED_APPS = [*INSTALLED_APPS, "django.contrib.sessions"]  # noqa: F405
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
REST_FRAMEWORK = {
    **REST_FRAMEWORK,  # noqa: F405
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "mcpsync.routes.django_user.InProcessUserAuthentication",
        "rest_framework.authentication.SessionAuthentication"],
}
