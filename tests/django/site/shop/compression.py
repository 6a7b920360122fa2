"""A compressing middleware of someone else's (the system check should warn about it)."""


class BrotliMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)
