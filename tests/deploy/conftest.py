"""Fixtures for the scale-out tests: nginx round-robin over two gunicorn instances
(``tests/deploy/topology.py``), skipped (failed under ``MCPSYNC_REQUIRE_PEERS=1``) when
nginx or gunicorn is missing. Every process is stopped by PID at teardown, and a traceback
on any instance's stderr fails the test."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from tests.services import require_binary

from .topology import NGINX, Topology

pytest.importorskip("gunicorn")
if sys.platform == "win32":  # pragma: no cover
    pytest.skip("gunicorn is POSIX only", allow_module_level=True)

KEY = "deploy-tests-shared-key"

MakeTopology = Callable[..., Topology]


@pytest.fixture
def make_topology(tmp_path: Path) -> Iterator[MakeTopology]:
    """``make_topology(env=..., instance_env=...)``: a started :class:`Topology`, stopped at
    teardown; the test fails if an instance printed a traceback, or nginx logged anything
    worse than an error."""
    require_binary("nginx", also=(NGINX,))
    made: list[Topology] = []

    def make(env: Mapping[str, str] | None = None,
             instance_env: Mapping[str, Mapping[str, str]] | None = None,
             **options: object) -> Topology:
        merged = {"MCPSYNC_REQUEST_STATE_KEY": KEY, **(env or {})}
        topology = Topology(tmp_path / f"topology-{len(made)}", env=merged,
                            instance_env=instance_env or {}, **options)  # type: ignore[arg-type]
        topology.workdir.mkdir(parents=True)
        made.append(topology)
        return topology.start()

    yield make
    for topology in made:
        topology.stop()
    problems = [t for topology in made
                for t in (*topology.tracebacks(), *topology.nginx_problems())]
    assert not problems, "\n".join(problems)


@pytest.fixture
def balanced(make_topology: MakeTopology) -> Topology:
    """Two instances with one shared request_state_key, memory stores."""
    return make_topology()
