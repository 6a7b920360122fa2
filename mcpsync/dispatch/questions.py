"""The signal that ends a 2026-07-28 handler attempt with questions for the client.

Under 2026-07-28 a server cannot send requests. A handler's ``ctx.elicit`` (or ``sample``,
``list_roots``) whose answer is not in the retry's ``inputResponses`` raises
:class:`InputRequired`; the stateless dispatcher turns it into an ``InputRequiredResult``.
"""

from __future__ import annotations

from typing import Any, Final

from ..protocol.methods import VIEWS

#: What an ``InputRequest`` may be (the 2026-07-28 schema): no other method, custom ones
#: included, can be asked of a client in that era.
#: (The method table's 2026-07-28 requests from a server to a client.)
INPUT_REQUEST_METHODS: Final = VIEWS.questions


class InputRequired(BaseException):
    """Ends a handler attempt that needs answers from the client.

    A BaseException so that a tool's ``except Exception`` (and mcpsync's own conversion of
    tool exceptions into ``isError`` results) lets it through. ``requests`` maps each
    question's key to its ``{"method", "params"}``.
    """

    def __init__(self, requests: dict[str, Any]) -> None:
        super().__init__("input required")
        self.requests = requests
