"""The server ``mcpsync apps preview`` is run on in the CLI tests (MODULE:OBJ)."""

from tests.apps.views import HAND_VIEW, meta_server

# The script the view tries to load is on a port nothing serves: the CSP blocks it first.
server = meta_server(HAND_VIEW.replace("{evil}", "http://127.0.0.1:9"))
