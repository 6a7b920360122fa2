"""The test site's URLs: a login view, a page, and the MCP endpoint in the URLconf."""

from django.contrib.auth import views as auth_views
from django.http import JsonResponse
from django.urls import path
from shop.models import Order

from mcpsync.django import mcp_endpoint


def orders(request):
    return JsonResponse({"count": Order.objects.count(), "user": request.user.username})


urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="login.html"), name="login"),
    path("orders/", orders),
    path("mcp", mcp_endpoint()),
]
