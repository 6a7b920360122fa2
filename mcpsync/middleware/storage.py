"""Where a guard keeps what it shares: ``storage=`` as a URL.

``"memory://"`` (the default): this process only. Right for stdio, for one process, and
for tests; behind several workers each one counts alone. ``"redis://host:6379/0"`` (also
``rediss://``, ``unix://``): every process and machine that names the same Redis shares one
count, which is what a limit behind gunicorn and a load balancer needs. A ready
``redis.Redis`` client is taken too, for the guards that talk to Redis themselves
(concurrency slots, the response cache); the rate limit goes through the ``limits``
library, which connects by URL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..errors import StoreUnavailableError

MEMORY = "memory://"


def is_memory(storage: Any) -> bool:
    return storage is None or (isinstance(storage, str) and storage.startswith("memory://"))


def redis_client(storage: Any) -> Any:
    """A Redis client for ``storage`` (a URL or a ``redis.Redis``), built as mcpsync's
    Redis stores build theirs: short timeouts, one quick retry, budgeted waits."""
    from ..redis.client import connect  # the ``redis`` extra, only when Redis is named

    return connect(storage)


def limits_storage(storage: Any) -> Any:
    """The ``limits`` library's storage for ``storage`` (a URL)."""
    try:
        from limits.storage import storage_from_string
    except ImportError:  # pragma: no cover - the extra is missing
        raise ImportError("RateLimit needs the 'limits' package: "
                          "pip install 'mcpsync[guards]'") from None
    if not isinstance(storage, str):
        raise TypeError("RateLimit(storage=...) takes a URL ('memory://', 'redis://...')")
    if is_memory(storage):
        return storage_from_string(MEMORY)
    return storage_from_string(storage, socket_timeout=2.0, socket_connect_timeout=2.0)


@contextlib.contextmanager
def reachable(what: str) -> Iterator[None]:
    """A storage that cannot be reached (Redis down, a timeout) becomes
    :class:`~mcpsync.errors.StoreUnavailableError`, as with mcpsync's own Redis stores:
    the request fails, it is not let through unguarded."""
    try:
        yield
    except StoreUnavailableError:
        raise
    except (ConnectionError, TimeoutError, OSError) as exc:
        raise StoreUnavailableError(f"{what}: storage unavailable ({type(exc).__name__})") \
            from exc
    except Exception as exc:
        if type(exc).__module__.startswith("redis"):  # redis-py's own error classes
            raise StoreUnavailableError(
                f"{what}: storage unavailable ({type(exc).__name__})") from exc
        raise


__all__ = ["MEMORY", "is_memory", "limits_storage", "reachable", "redis_client"]
