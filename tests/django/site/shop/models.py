"""One model, with a custom permission the MCP tools are guarded by."""

from django.db import models


class Order(models.Model):
    item = models.CharField(max_length=100)
    owner = models.CharField(max_length=150, default="")

    class Meta:
        permissions = [("issue_refund", "Can issue a refund")]
