"""The refusal a guard of :mod:`mcpsync.middleware` answers with when a limit is reached.

One class, one code (:data:`~mcpsync.errors.RATE_LIMITED`, -32029) for a rate limit and a
concurrency limit alike: both mean "not now, try again in ``retryAfter`` seconds". The HTTP
app answers it ``429 Too Many Requests`` with ``Retry-After``; stdio and memory carry the
same JSON-RPC error, the wait in ``data.retryAfter``. A client receives it as this class
(:func:`mcpsync.errors.error_class`), so ``except RateLimitedError`` works on every
transport.
"""

from __future__ import annotations

from typing import Any

from ..errors import RATE_LIMITED, MCPError


class RateLimitedError(MCPError):
    """A guard refused the request for now: ``retry_after`` seconds until a retry may pass
    (``data`` is ``{"retryAfter": seconds, "limit": "20 per 1 minute"}``)."""

    def __init__(self, message: str, *, code: int | None = None, data: Any = None,
                 retry_after: float | None = None, limit: str | None = None) -> None:
        if data is None:
            data = {"retryAfter": round(max(0.0, retry_after or 0.0), 3)}
            if limit is not None:
                data["limit"] = limit
        super().__init__(message, code=RATE_LIMITED if code is None else code, data=data)

    @property
    def retry_after(self) -> float:
        """Seconds to wait before trying again (0 when the server did not say)."""
        wait = self.data.get("retryAfter") if isinstance(self.data, dict) else None
        return float(wait) if isinstance(wait, (int, float)) and wait >= 0 else 0.0


__all__ = ["RateLimitedError"]
