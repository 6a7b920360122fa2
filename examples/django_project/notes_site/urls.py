"""Django's own URLs; /mcp is not here: it is mounted around the WSGI app (see wsgi.py)."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("", views.index, name="index"),
    path("books/", views.books, name="books"),
]
