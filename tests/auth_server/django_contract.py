"""The store contract (test_store_contract.py) against DjangoIssuerStore, in a process of
its own with the Django test site's settings: ``python -m tests.auth_server.django_contract``
with ``OAUTHSITE_DB`` naming a database file. Each contract test gets emptied tables;
prints one line per test and exits non-zero when one fails."""

from __future__ import annotations

import inspect
import os
import sys
import traceback
from pathlib import Path

SITE = Path(__file__).resolve().parent / "django_site"


def main() -> int:
    sys.path.insert(0, str(SITE))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "oauthsite.settings")
    os.environ.setdefault("OAUTHSITE_URL", "http://127.0.0.1:1")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from mcpsync.django.oauth import models
    from mcpsync.django.oauth.store import DjangoIssuerStore

    from . import test_store_contract as contract

    failed = 0
    for name, test in inspect.getmembers(contract, inspect.isfunction):
        if not name.startswith("test_"):
            continue
        for model in (models.OAuthClient, models.OAuthCode, models.OAuthGrant,
                      models.OAuthToken, models.OAuthKey):
            model.objects.all().delete()
        store = DjangoIssuerStore(max_clients=3)
        try:
            test((store, store))
            print(f"PASS {name}")
        except Exception:
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
