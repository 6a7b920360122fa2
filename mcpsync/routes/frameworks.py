"""The OpenAPI document of a WSGI application, when none is given: built from its framework
(a Flask app, a Django REST framework project), or served by the app itself and fetched in
process.

Flask: with apispec installed, each view's docstring (the YAML after ``---``, apispec's
Flask plugin; marshmallow schemas named there resolve when marshmallow is installed) says
what it takes and answers; a route whose view documents nothing is still listed from the
URL map: its path converters typed (``<int:id>`` an integer, ``<uuid:key>`` a UUID...),
its body, for the methods that take one, any JSON object. Without apispec, every route is
listed that way.

Django: drf-spectacular's generator, as ``manage.py spectacular`` would write it (the
project's settings, serializers and ``@extend_schema`` decide).

Any other app: its own document, ``GET /openapi.json`` (or the path given with
:class:`AppDocument`) made in process.
"""

from __future__ import annotations

import inspect
import re
import sys
from dataclasses import dataclass
from typing import Any, Final

from ..protocol import jsonrpc
from .document import OpenAPIError

__all__ = ["AppDocument", "django_document", "flask_document"]

_CONVERTERS: Final[dict[str, dict[str, Any]]] = {
    "int": {"type": "integer"}, "float": {"type": "number"},
    "uuid": {"type": "string", "format": "uuid"}, "path": {"type": "string"},
    "string": {"type": "string"}, "default": {"type": "string"},
}
#: A variable of a werkzeug rule: ``<name>``, ``<int:name>``, ``<any(a, b):name>``.
_RULE_PART: Final = re.compile(
    r"<(?:([a-zA-Z_][a-zA-Z0-9_]*)(?:\([^)]*\))?:)?([a-zA-Z_][a-zA-Z0-9_]*)>")
_BODY_METHODS: Final = ("POST", "PUT", "PATCH")


@dataclass(frozen=True)
class AppDocument:
    """The app serves its own document at ``path``: fetched in process, no socket."""

    path: str = "/openapi.json"


def is_flask(app: Any) -> bool:
    flask = sys.modules.get("flask")
    return flask is not None and isinstance(app, flask.Flask)


def is_django(app: Any) -> bool:
    return type(app).__module__.startswith("django.")


def flask_document(app: Any) -> dict[str, Any]:
    """The document of a Flask app (see the module doc)."""
    documented: dict[str, Any] = {}
    try:
        from apispec import APISpec
        from apispec.exceptions import APISpecError
        from apispec_webframeworks.flask import FlaskPlugin
    except ImportError:
        APISpec = None  # type: ignore[misc,assignment]
    if APISpec is not None:
        plugins: list[Any] = [FlaskPlugin()]
        try:
            from apispec.ext.marshmallow import MarshmallowPlugin

            plugins.append(MarshmallowPlugin())
        except ImportError:
            pass
        spec = APISpec(title=app.name, version="1.0.0", openapi_version="3.0.3",
                       plugins=plugins)
        with app.test_request_context():
            for rule in app.url_map.iter_rules():
                if rule.endpoint == "static":
                    continue
                try:
                    spec.path(view=app.view_functions[rule.endpoint], app=app)
                except APISpecError as exc:
                    raise OpenAPIError(f"the docstring of the view {rule.endpoint!r}: "
                                       f"{exc}") from None
        documented = spec.to_dict()
    return _with_url_map(app, documented)


def _with_url_map(app: Any, document: dict[str, Any]) -> dict[str, Any]:
    paths: dict[str, Any] = document.setdefault("paths", {})
    document.setdefault("openapi", "3.0.3")
    document.setdefault("info", {"title": app.name, "version": "1.0.0"})
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = _RULE_PART.sub(lambda m: "{" + m.group(2) + "}", rule.rule)
        item = paths.setdefault(path, {})
        view = app.view_functions.get(rule.endpoint)
        doc = inspect.getdoc(view) or ""
        summary = doc.split("---")[0].strip()
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            documented = item.get(method.lower())
            if isinstance(documented, dict):
                if summary and "summary" not in documented and "description" not in documented:
                    documented["summary"] = summary  # the docstring's text before '---'
                continue
            operation: dict[str, Any] = {"operationId": rule.endpoint if len(
                rule.methods - {"HEAD", "OPTIONS"}) == 1 else f"{rule.endpoint}_{method.lower()}",
                "responses": {"200": {"description": "OK"}}}
            if summary:
                operation["description"] = summary
            parameters = [
                {"name": name, "in": "path", "required": True,
                 "schema": dict(_CONVERTERS.get(converter or "default", {"type": "string"}))}
                for converter, name in _RULE_PART.findall(rule.rule)]
            if parameters:
                operation["parameters"] = parameters
            if method in _BODY_METHODS:
                operation["requestBody"] = {"content": {"application/json": {
                    "schema": {"type": "object"}}}}
            item[method.lower()] = operation
    return document


def django_document() -> dict[str, Any]:
    """The Django project's document, from drf-spectacular."""
    try:
        from drf_spectacular.generators import SchemaGenerator
        from drf_spectacular.renderers import OpenApiJsonRenderer
    except ImportError:
        raise OpenAPIError("a Django project's document is built with drf-spectacular: "
                           "pip install drf-spectacular, or pass openapi=") from None
    schema = SchemaGenerator().get_schema(  # type: ignore[no-untyped-call]
        request=None, public=True)
    raw = OpenApiJsonRenderer().render(schema, renderer_context={})
    document = jsonrpc.loads(raw)
    if not isinstance(document, dict):
        raise OpenAPIError("drf-spectacular made no document")
    return document
