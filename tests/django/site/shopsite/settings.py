"""Settings of the test site: SQLite (a file named by SHOPSITE_DB), contrib.auth, sessions,
DRF with token auth, GZipMiddleware first, a header-based RemoteUserMiddleware and
LoginRequiredMiddleware, and mcpsync.django."""

import json
import os

BASE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECRET_KEY = "test-only-not-secret"
DEBUG = os.environ.get("SHOPSITE_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "shopsite.urls"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "rest_framework",
    "rest_framework.authtoken",
    "mcpsync.django",
    "shop",
]

MIDDLEWARE = [
    "django.middleware.gzip.GZipMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "shop.middleware.HeaderRemoteUserMiddleware",
    "shop.middleware.PeekBodyMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "shop.middleware.KnownRemoteUserBackend",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOPSITE_DB", os.path.join(BASE_DIR, "shop.sqlite3")),
        "CONN_MAX_AGE": int(os.environ.get("SHOPSITE_CONN_MAX_AGE", "0")),
    }
}

TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [],
              "APP_DIRS": True, "OPTIONS": {}}]

LOGIN_URL = "/login/"

MCPSYNC = {
    "NAME": "shop",
    "PATH": "mcp",
    "AUTHENTICATION_CLASSES": ["rest_framework.authentication.TokenAuthentication"],
    "OPTIONS": {"json_window": 0.2},
    # The tests add keys (a misspelt one, to see the system check) through the environment.
    **json.loads(os.environ.get("SHOPSITE_MCPSYNC_EXTRA", "{}")),
}
MIDDLEWARE += json.loads(os.environ.get("SHOPSITE_EXTRA_MIDDLEWARE", "[]"))

# A refused Host is expected in the tests: logged without its traceback.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"null": {"class": "logging.NullHandler"}},
    "loggers": {"django.security.DisallowedHost": {"handlers": ["null"], "propagate": False}},
}
