"""A Django site whose users sign in with Django's own auth and connect MCP clients."""

import os

SITE_URL = os.environ["OAUTHSITE_URL"]
SECRET_KEY = os.environ.get("OAUTHSITE_SECRET", "a-test-secret-that-is-long-enough-0123456789")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "mcpsync.django.oauth",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "oauthsite.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [os.path.join(os.path.dirname(os.path.dirname(__file__)), "templates")],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": ["django.template.context_processors.request",
                                       "django.contrib.auth.context_processors.auth",
                                       "django.contrib.messages.context_processors.messages"]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                         "NAME": os.environ["OAUTHSITE_DB"],
                         "OPTIONS": {"timeout": 20}}}
LOGIN_URL = "/login"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
