from django.http import HttpRequest, JsonResponse
from django.urls import path

from library.urls import urlpatterns as api


def note(request: HttpRequest) -> JsonResponse:
    """A plain Django view (no DRF): who ``request.user`` is, on a POST (CSRF applies)."""
    user = request.user
    return JsonResponse({"user": user.username if user.is_authenticated else None},
                        status=200 if user.is_authenticated else 403)


urlpatterns = [*api, path("note/", note)]
