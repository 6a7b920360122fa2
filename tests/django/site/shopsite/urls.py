"""The test site's URLs: a login view, a page, and the MCP endpoint in the URLconf (the
``include`` form; the docs' runnable example calls ``mcp_endpoint`` itself)."""

from django.contrib.auth import views as auth_views
from django.http import JsonResponse
from django.urls import include, path
from shop.models import Order


def orders(request):
    return JsonResponse({"count": Order.objects.count(), "user": request.user.username})


urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="login.html"), name="login"),
    path("orders/", orders),
    path("", include("mcpsync.django.urls")),  # MCPSYNC["PATH"]: /mcp
]
