"""Create the test site's users: alice (may issue refunds, has a DRF token "alice-token"),
bob (no permission, token "bob-token")."""

from django.contrib.auth.models import Permission, User
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    def handle(self, *args, **options):
        alice = User.objects.create_user("alice", password="secret")
        alice.user_permissions.add(Permission.objects.get(codename="issue_refund"))
        bob = User.objects.create_user("bob", password="secret")
        Token.objects.create(user=alice, key="alice-token")
        Token.objects.create(user=bob, key="bob-token")
