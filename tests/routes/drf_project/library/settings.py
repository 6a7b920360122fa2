"""Settings of the DRF project the routes tests serve as MCP tools (in a child process:
one Django configuration per process, and the suite's own example project has its own)."""

import os

SECRET_KEY = "routes-tests-only"
DEBUG = False
ALLOWED_HOSTS = ["localhost", "testserver"]
ROOT_URLCONF = "library.urls"
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "rest_framework",
    "drf_spectacular",
    "shelf",
]
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                         "NAME": os.environ["LIBRARY_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
# The front server (here: the MCP server) says who the user is in REMOTE_USER.
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.RemoteUserBackend"]
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.RemoteUserAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}
SPECTACULAR_SETTINGS = {"TITLE": "Library", "VERSION": "1.0.0"}
