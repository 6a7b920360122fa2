"""How a request's path moves between modules: modules visited, stays, returns.

    python benchmarks/flow_stays.py [--era modern|session] [--within PACKAGE] [--show]

Calls ``server.wsgi_app(path="/mcp")`` of ``benchmarks/servers/bench_mcpsync.py`` in
process (as ``wsgi_inproc.py`` does), warms it, then records one ``tools/call`` of
``echo`` with a profile hook on every thread. Following the executing frame (calls and
returns alike), a *stay* is a run of consecutive events in one ``mcpsync/`` module; a
*return* is a stay in a module the request had already left. One request read top to
bottom visits each module once: stays = modules, returns = 0. ``--show`` prints the
sequence. ``--within http`` counts only the modules of one package (``mcpsync/http/``):
a call into another package and back is part of the current stay, so what is counted is
the path at that package's level (intake, era, reply), not its calls into lower layers.
Run with ``PYTHONPATH=<checkout>`` to measure other code the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from types import FrameType
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wsgi_inproc  # the same app and prepared environs


def record(call: Any) -> list[str]:
    """The ``mcpsync/`` module of every call and return event of ``call()``, in order
    (one thread's events after another's when a handler thread runs)."""
    per_thread: dict[int, list[str]] = {}

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        name = frame.f_code.co_filename
        at = name.rfind("/mcpsync/")
        if at < 0:
            return
        if event == "return":  # back in the caller's module
            caller = frame.f_back
            if caller is None:
                return
            name = caller.f_code.co_filename
            at = name.rfind("/mcpsync/")
            if at < 0:
                return
        per_thread.setdefault(threading.get_ident(), []).append(name[at + 9:])

    threading.setprofile(hook)  # type: ignore[arg-type]
    sys.setprofile(hook)  # type: ignore[arg-type]
    try:
        call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return [m for events in per_thread.values() for m in events]


def stays(events: list[str], within: str | None = None) -> list[str]:
    """The stays of ``events``: runs of one module. With ``within`` (a package such as
    ``"http"``), only that package's modules are kept: time spent in another package is
    part of the stay that called into it."""
    if within is not None:
        prefix = within.strip("/") + "/"
        events = [module for module in events if module.startswith(prefix)]
    out: list[str] = []
    for module in events:
        if not out or out[-1] != module:
            out.append(module)
    return out


def count(seq: list[str]) -> tuple[int, int, int]:
    """(modules, stays, returns) of a sequence of stays."""
    seen: set[str] = set()
    returns = 0
    for module in seq:
        returns += module in seen
        seen.add(module)
    return len(seen), len(seq), returns


def measure(era: str, within: str | None = None) -> list[str]:
    """The stays of one warmed ``tools/call`` of ``era`` (``modern`` or ``session``)."""
    app = wsgi_inproc._app()
    try:
        call = wsgi_inproc._modern(app) if era == "modern" else wsgi_inproc._session(app)
        for _ in range(50):
            call()
        return stays(record(call), within)
    finally:
        app.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--era", choices=wsgi_inproc.ERAS, default="modern")
    ap.add_argument("--within", metavar="PACKAGE",
                    help="count only this package's modules (e.g. http)")
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args()
    seq = measure(args.era, args.within)
    modules, n, returns = count(seq)
    where = f" within {args.within}/" if args.within else ""
    print(f"{args.era}{where}: {modules} modules, {n} stays, {returns} returns")
    if args.show:
        print(" → ".join(seq))
    return 0


if __name__ == "__main__":
    sys.exit(main())
