from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path

from mcpsync.django.oauth.urls import issuer_urls

from .issuer import issuer

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login", LoginView.as_view(), name="login"),
    path("", include(issuer_urls(issuer))),
]
