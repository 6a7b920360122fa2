from rest_framework import serializers

from shelf.models import Book


class BookSerializer(serializers.ModelSerializer):
    class Meta:
        model = Book
        fields = ["id", "title", "author", "year", "added_by"]
        read_only_fields = ["id", "added_by"]
