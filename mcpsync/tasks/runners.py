"""Is the process running a task still alive? (For a store opened after a crash.)

A task's ``runner`` is ``host:pid:boot`` (:func:`~mcpsync.stores.tasks.runner_id`). From
another process, "pid alive" is not enough: pids are recycled, and a container restarted
in place gets the same hostname and very often the same pid (1, or a small number) as the
process that died. So a store also records, when a process first writes a task it runs,
that process's *identity*: on Linux the kernel's boot id and the process's start time (in
clock ticks since boot, from ``/proc/PID/stat``). A runner is then dead when

* it is this process's pid but not this process (another boot token): the restarted
  container case;
* its pid does not exist, or is a zombie (killed, not yet reaped);
* its pid exists but its identity differs from the recorded one (a recycled pid, or the
  machine rebooted).

Pids only mean something inside one pid namespace, so the registration also names the
namespace of the process (``/proc/self/ns/pid``): a runner registered from another one (a
second container that has the same hostname, e.g. with host networking, and shares the
file through a volume) is not judged at all.

Without ``/proc`` (macOS, BSD) there is no identity, and a recycled pid keeps a dead
runner's tasks ``working`` until their ttl ends; Windows is not checked at all. Tasks of
another host are never judged: only a store shared by hosts (issue #17) could.
"""

from __future__ import annotations

import os
import socket

from ..stores.tasks import runner_id

__all__ = ["process_identity", "registration", "runner_alive"]

_registered: tuple[int, str | None] | None = None  # (pid, registration): fork-safe cache


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name (which may hold spaces and parentheses)."""
    text = _read(f"/proc/{pid}/stat")
    if text is None or ")" not in text:
        return None
    return text[text.rindex(")") + 2:].split()


def process_identity(pid: int) -> str | None:
    """``boot_id:start_ticks`` for a process on this machine, or ``None`` where the system
    does not tell (no ``/proc``) or the process does not exist."""
    boot = _read("/proc/sys/kernel/random/boot_id")
    fields = _stat_fields(pid)
    if boot is None or fields is None or len(fields) < 20:
        return None
    return f"{boot.strip()}:{fields[19]}"  # field 22 of stat: starttime


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def registration() -> str | None:
    """What a store records about this process when it first runs a task here:
    ``PIDNS BOOT_ID:START_TICKS``, or ``None`` without ``/proc``. Cached per pid, so a
    process forked after the first call still describes itself."""
    global _registered
    pid = os.getpid()
    if _registered is None or _registered[0] != pid:
        identity = process_identity(pid)
        namespace = _pid_namespace()
        _registered = (pid, None if identity is None or namespace is None
                       else f"{namespace} {identity}")
    return _registered[1]


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    fields = _stat_fields(pid)
    if fields is not None:
        return fields[0] not in ("Z", "X")  # a zombie has exited; only its entry is left
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, but it exists
    except OSError:
        return True
    return True


def runner_alive(runner: str, registered: str | None = None) -> bool | None:
    """Whether ``runner`` (``host:pid:boot``) still runs: ``True``/``False`` for a runner of
    this host, ``None`` when this process cannot tell (another host or pid namespace, a
    malformed runner, Windows). ``registered`` is what :func:`registration` said in the
    runner's process, if it said anything."""
    parts = runner.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or os.name == "nt":
        return None
    host, pid_text, _boot = parts
    if host != socket.gethostname():
        return None
    identity = None
    if registered:
        namespace, _, identity = registered.partition(" ")
        if namespace != _pid_namespace():
            return None
    pid = int(pid_text)
    if pid == os.getpid():
        return runner == runner_id()
    if not _pid_alive(pid):
        return False
    if identity is not None:
        now = process_identity(pid)
        if now is not None and now != identity:
            return False
    return True
