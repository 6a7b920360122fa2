"""Tasks shared by gunicorn workers through one SQLite file: a WSGI app for tests that run
it under real gunicorn with several workers.

    MCPSYNC_TEST_TASK_STORE=/tmp/tasks.db gunicorn -w 2 tests.tasks.gunicorn_tasks:app

Each worker imports this module, so each opens the file (and recovers the tasks of a dead
worker as it starts). The tools write and read task records directly, so the store is
tested across workers before the ``tasks/*`` surfaces exist; once they do, the same app
serves ``tasks/get`` and ``tasks/result`` for tasks created on any worker (the server
engineer's tools can be added here).
"""

from __future__ import annotations

import json
import os

from mcpsync import ProtocolOptions, Server, SqliteTaskStore
from mcpsync.protocol.versions import MODERN_VERSIONS
from mcpsync.tasks import TaskRecord, runner_id

OWNER = "gunicorn-test"

store = SqliteTaskStore(os.environ["MCPSYNC_TEST_TASK_STORE"])
_options = {"protocol": ProtocolOptions(modern_versions=MODERN_VERSIONS),
            "request_state_key": "tasks-across-workers"}
try:
    server = Server("tasks-across-workers", task_store=store, **_options)  # type: ignore[arg-type]
except TypeError:  # a branch without Server(task_store=...) (issue #13, the server side)
    server = Server("tasks-across-workers", **_options)  # type: ignore[arg-type]


@server.tool()
def start(task_id: str) -> str:
    """Create a working task run by this worker; which worker that was."""
    store.create(TaskRecord(task_id=task_id, owner=OWNER, surface="v2", tool="start",
                            ttl_ms=600_000, runner=runner_id()))
    return json.dumps({"pid": os.getpid()})


@server.tool()
def complete(task_id: str, text: str) -> str:
    """Complete a task, whichever worker created it."""
    store.update(task_id, status="completed", result={"content": [{"type": "text",
                                                                   "text": text}]})
    return json.dumps({"pid": os.getpid()})


@server.tool()
def look(task_id: str) -> str:
    """The task as this worker reads it."""
    record = store.get(task_id, owner=OWNER)
    return json.dumps({"pid": os.getpid(),
                       "status": None if record is None else record.status,
                       "result": None if record is None else record.result,
                       "error": None if record is None else record.error})


app = server.wsgi_app(path="/mcp")
