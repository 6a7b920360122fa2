import threading

from rest_framework import permissions, viewsets

from shelf.models import Book
from shelf.serializers import BookSerializer

#: The threads the views ran on (the test shows they are the MCP handler's own).
THREADS: list[int] = []


class CanEditBooks(permissions.BasePermission):
    """Anyone signed in reads; changing the shelf takes the model's permissions."""

    message = "you may not change the shelf"

    def has_permission(self, request, view):
        if request.method in permissions.SAFE_METHODS:
            return True
        return request.user.has_perm("shelf.add_book")


class BookViewSet(viewsets.ModelViewSet):
    """Books on the shelf."""

    queryset = Book.objects.all()
    serializer_class = BookSerializer
    permission_classes = [permissions.IsAuthenticated, CanEditBooks]

    def get_queryset(self):
        THREADS.append(threading.get_ident())
        return super().get_queryset()

    def perform_create(self, serializer):
        serializer.save(added_by=self.request.user.username)
