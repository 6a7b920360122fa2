"""The scale-out topology as real processes: nginx round-robin (no stickiness) over
independent gunicorn instances, each standing for one machine.

Used by the tests (``tests/deploy/conftest.py``) and by ``benchmarks/deploy.py``, so it
imports nothing from pytest. Every process runs in its own process group on free loopback
ports, with its files (logs, nginx temp paths, the SQLite task store) in one directory, and
is stopped by its PID: SIGTERM, a bounded wait, then SIGKILL of its group.

nginx's configuration is ``examples/deploy/nginx.conf.template``, the file
``docs/deploying.md`` shows: the tests run the recipe the docs give.
"""

from __future__ import annotations

import os
import pwd
import signal
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.helpers import wait_until
from tests.serving import free_port, gunicorn_argv, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "examples" / "deploy" / "nginx.conf.template"
APP = "tests.deploy.app:app"
NGINX = "/usr/sbin/nginx"
STOP_TIMEOUT = 15.0
START_TIMEOUT = 60.0


def render_nginx_conf(prefix: Path, listen: str, upstreams: list[str]) -> str:
    """The template with its three placeholders filled in."""
    servers = "\n        ".join(f"server {u} max_fails=1 fail_timeout=5s;" for u in upstreams)
    text = TEMPLATE.read_text()
    return (text.replace("{{PREFIX}}", str(prefix)).replace("{{LISTEN}}", listen)
            .replace("{{UPSTREAMS}}", servers))


def _control_socket(path: Path) -> list[str]:
    """gunicorn 27's control socket in our directory: by default every gunicorn of the
    user shares ``~/.gunicorn/gunicorn.ctl``, so two instances (or other tests) would take
    it from each other. Older gunicorns have none."""
    from gunicorn.config import KNOWN_SETTINGS

    names = {setting.name for setting in KNOWN_SETTINGS}
    if "control_socket" not in names:
        return []
    if len(str(path)) > 100 and "control_socket_disable" in names:  # AF_UNIX paths: 108 bytes
        return ["--no-control-socket"]
    return ["--control-socket", str(path)]


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM) -> None:
    """Stop ``proc`` and its process group: ``sig``, wait (bounded), then SIGKILL the group."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
    try:  # what is left of the group (gunicorn workers a killed master left behind)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(STOP_TIMEOUT)


@dataclass
class Instance:
    """One gunicorn master and its workers, standing for one machine."""

    name: str
    port: int
    stderr_path: Path
    proc: subprocess.Popen[Any] | None = None
    _stderr: IO[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Topology:
    """nginx on ``url`` round-robin over ``instances`` (see the module docstring).

    ``env`` configures every instance's app (``tests/deploy/app.py``: its store, its
    ``request_state_key``); ``instance_env`` adds to it per instance name, so two
    instances can be given different keys."""

    workdir: Path
    instances_count: int = 2
    workers: int = 2
    threads: int = 8
    env: Mapping[str, str] = field(default_factory=dict)
    instance_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    instances: list[Instance] = field(default_factory=list)
    nginx: subprocess.Popen[Any] | None = None
    port: int = 0

    @property
    def url(self) -> str:
        """The endpoint through the balancer."""
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def nginx_dir(self) -> Path:
        return self.workdir / "nginx"

    def instance(self, name: str) -> Instance:
        return next(i for i in self.instances if i.name == name)

    # -- starting -------------------------------------------------------------------------

    def start(self) -> Topology:
        try:
            for index in range(self.instances_count):
                name = "ab"[index] if self.instances_count <= 2 else f"i{index}"
                instance = Instance(name, free_port(), self.workdir / f"gunicorn-{name}.err")
                self.instances.append(instance)
                self.start_instance(instance)
            self._start_nginx()
        except BaseException:
            self.stop()
            raise
        return self

    def start_instance(self, instance: Instance) -> None:
        """(Re)start ``instance``'s gunicorn on its port; wait until it listens."""
        argv = gunicorn_argv(APP, instance.port, workers=self.workers, threads=self.threads,
                             options=["--timeout", "120", *_control_socket(
                                 self.workdir / f"gunicorn-{instance.name}.ctl")])
        env = dict(os.environ)
        env.update(self.env)
        env.update(self.instance_env.get(instance.name, {}))
        ready = self.workdir / "ready"
        ready.mkdir(exist_ok=True)
        booted = {p.name for p in ready.glob(f"{instance.name}-*")}
        env.update(MCPSYNC_DEPLOY_INSTANCE=instance.name, MCPSYNC_DEPLOY_READY_DIR=str(ready),
                   MCPSYNC_DEPLOY_PORT=str(instance.port),
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        instance._stderr = open(instance.stderr_path, "a")  # noqa: SIM115 (closed at stop)
        instance.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=instance._stderr,
                                         start_new_session=True)
        wait_for_port(instance.port, timeout=START_TIMEOUT, proc=instance.proc)
        proc = instance.proc

        def all_booted() -> bool:  # each worker imported the app (not just the master up)
            if proc.poll() is not None:
                raise RuntimeError(f"gunicorn {instance.name} exited: {instance.stderr()}")
            fresh = {p.name for p in ready.glob(f"{instance.name}-*")} - booted
            return len(fresh) >= self.workers

        wait_until(all_booted, timeout=START_TIMEOUT, interval=0.05,
                   message=f"gunicorn {instance.name}'s workers did not all boot")

    def _start_nginx(self) -> None:
        self.nginx_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        conf = self.nginx_dir / "nginx.conf"
        conf.write_text(render_nginx_conf(
            self.nginx_dir, f"127.0.0.1:{self.port}",
            [f"127.0.0.1:{i.port}" for i in self.instances]))
        directives = "daemon off;"
        if os.geteuid() == 0:  # keep the workers as this user (root would switch to nobody)
            directives += f" user {pwd.getpwuid(os.geteuid()).pw_name};"
        self.nginx = subprocess.Popen(
            [NGINX, "-p", str(self.nginx_dir), "-c", str(conf), "-e",
             str(self.nginx_dir / "error.log"), "-g", directives],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.nginx_dir / "stderr.log", "w"),  # noqa: SIM115
            start_new_session=True)
        wait_for_port(self.port, timeout=START_TIMEOUT, proc=self.nginx)

    # -- faults ---------------------------------------------------------------------------

    def kill_instance(self, name: str) -> None:
        """SIGKILL the instance's master and workers at once (the machine died)."""
        instance = self.instance(name)
        assert instance.proc is not None
        os.killpg(instance.proc.pid, signal.SIGKILL)
        instance.proc.wait(STOP_TIMEOUT)
        self._close_stderr(instance)
        # The workers die a moment after the master; until the last one has, the kernel
        # still accepts connections on the port (and a request sent there is lost).
        wait_until(lambda: not _accepts(instance.port), timeout=STOP_TIMEOUT, interval=0.02,
                   message=f"instance {name}'s port still accepts connections")

    # -- stopping -------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop everything by PID (nginx first, so nothing new reaches the instances)."""
        if self.nginx is not None:
            _stop(self.nginx)  # SIGTERM: fast shutdown, open streams cut
            self.nginx = None
        for instance in self.instances:
            if instance.proc is not None:
                _stop(instance.proc)
            self._close_stderr(instance)

    @staticmethod
    def _close_stderr(instance: Instance) -> None:
        if instance._stderr is not None:
            instance._stderr.close()
            instance._stderr = None

    def tracebacks(self) -> list[str]:
        """The stderr of every instance that printed a traceback."""
        return [f"instance {i.name}:\n{i.stderr()}" for i in self.instances
                if "Traceback" in i.stderr()]

    def nginx_problems(self) -> list[str]:
        """nginx's log lines worse than ``[error]`` (an upstream that refuses a connection
        is an ``[error]``: expected when an instance is killed)."""
        lines: list[str] = []
        for name in ("stderr.log", "error.log"):
            path = self.nginx_dir / name
            if path.exists():
                lines += [line for line in path.read_text(errors="replace").splitlines()
                          if any(f"[{level}]" in line for level in ("crit", "alert", "emerg"))]
        return lines

    def __enter__(self) -> Topology:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["Instance", "Topology", "render_nginx_conf"]
