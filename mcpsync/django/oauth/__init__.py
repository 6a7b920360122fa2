"""The authorization server in a Django site: ``"mcpsync.django.oauth"`` in
``INSTALLED_APPS`` (its models keep the state: :class:`~.store.DjangoIssuerStore`), the
endpoints in the URLconf (``path("", include(issuer_urls(server)))``), the site's own
login (``request.user``, ``settings.LOGIN_URL``), the consent page as the Django template
``mcpsync/consent.html`` (override it in your templates), and the users' grants in the
admin, with a "revoke" action. See docs/authorization-server.md.

Names are imported from the submodules (``.store``, ``.urls``, ``.hooks``): this package
is imported by Django's app registry before the models are ready.
"""
