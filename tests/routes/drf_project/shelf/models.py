from django.db import models


class Book(models.Model):
    title = models.CharField(max_length=200)
    author = models.CharField(max_length=200, blank=True)
    year = models.IntegerField(null=True, blank=True)
    added_by = models.CharField(max_length=150, editable=False, default="")

    class Meta:
        app_label = "shelf"
        ordering = ["id"]
