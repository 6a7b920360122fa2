"""The one read-modify-write base every store with changes shares.

A store that is written by many threads (and, shared, by many processes) must make each
change atomic: read the record, compute the new one, write it, with nothing in between.
How is the store's own business (a lock file, a lock, a SQLite transaction, a Redis
``WATCH``); *what* each public change does is not. So a store derives from
:class:`ReadModifyWrite`, its public change methods (``set_log_level``, ``cancel``,
``answer``, ...) only describe a change, and one method, :meth:`ReadModifyWrite._change`,
applies a described change atomically, once per store. Session stores describe a change
as a function of the record (:data:`mcpsync.stores.sessions.SessionChange`), task stores
as a :class:`mcpsync.tasks.changes.TaskChange`.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["ReadModifyWrite"]

#: What a change is described as (contravariant: a store may accept more).
ChangeT = TypeVar("ChangeT", contravariant=True)
#: What applying it returns.
ResultT = TypeVar("ResultT", covariant=True)


class ReadModifyWrite(Generic[ChangeT, ResultT]):
    """A store whose every change goes through one atomic :meth:`_change`.

    Subclasses (the change families, :class:`~mcpsync.stores.sessions.SessionChanges` and
    :class:`~mcpsync.tasks.changes.TaskChanges`) write their public methods once over
    :meth:`_change`; each backend implements only :meth:`_change`.
    """

    def _change(self, key: str, change: ChangeT) -> ResultT:
        """Apply ``change`` to the record under ``key`` atomically (read, change, write
        with nothing in between, on every thread and process sharing the store)."""
        raise NotImplementedError
