"""The task test server (``tests.tasks.task_server``) as a WSGI app for gunicorn with
several workers, all sharing one SQLite task store and one session directory:

    MCPSYNC_TEST_TASK_STORE=/tmp/tasks.db MCPSYNC_TEST_SESSIONS=/tmp/sessions \\
        gunicorn -w 2 tests.tasks.gunicorn_task_server:app

Every response says which worker sent it (``X-Worker-Pid``), so a test can tell that a
task created on one worker was served by another.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from mcpsync import SqliteTaskStore
from mcpsync.http import FileSessionStore
from tests.tasks.task_server import make_server

store = SqliteTaskStore(os.environ["MCPSYNC_TEST_TASK_STORE"])
server = make_server(task_store=store)
_app = server.wsgi_app(path="/mcp",
                       session_store=FileSessionStore(os.environ["MCPSYNC_TEST_SESSIONS"]))


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    def start(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
        return start_response(status, [*headers, ("X-Worker-Pid", str(os.getpid()))], *exc)

    return _app(environ, start)  # type: ignore[no-any-return]
