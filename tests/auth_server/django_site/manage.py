"""The Django test site of the authorization server (tests/auth_server/test_django_site.py)."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "oauthsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
