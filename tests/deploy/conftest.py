"""Fixtures for the scale-out tests: nginx round-robin over two gunicorn instances
(``tests/deploy/topology.py``), skipped (failed under ``MCPSYNC_REQUIRE_PEERS=1``) when
nginx or gunicorn is missing. Every process is stopped by PID at teardown, and a traceback
on any instance's stderr fails the test."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from tests.helpers import require_module
from tests.services import require_binary

from .topology import NGINX, Topology

require_module("gunicorn")
if sys.platform == "win32":  # pragma: no cover
    pytest.skip("gunicorn is POSIX only", allow_module_level=True)

KEY = "deploy-tests-shared-key"

MakeTopology = Callable[..., Topology]


class TopologyMaker:
    """Makes started :class:`Topology` s under ``base``; ``close()`` stops them all by PID."""

    def __init__(self, base: Path) -> None:
        require_binary("nginx", also=(NGINX,))
        self.base = base
        self.made: list[Topology] = []

    def __call__(self, env: Mapping[str, str] | None = None,
                 instance_env: Mapping[str, Mapping[str, str]] | None = None,
                 **options: object) -> Topology:
        merged = {"MCPSYNC_REQUEST_STATE_KEY": KEY, **(env or {})}
        topology = Topology(self.base / f"topology-{len(self.made)}", env=merged,
                            instance_env=instance_env or {}, **options)  # type: ignore[arg-type]
        topology.workdir.mkdir(parents=True)
        self.made.append(topology)
        return topology.start()

    def problems(self) -> list[str]:
        """Every instance's traceback, and nginx's log lines worse than an error."""
        return [t for topology in self.made
                for t in (*topology.tracebacks(), *topology.nginx_problems())]

    def close(self) -> None:
        for topology in self.made:
            topology.stop()


@pytest.fixture
def make_topology(tmp_path: Path) -> Iterator[MakeTopology]:
    """``make_topology(env=..., instance_env=...)``: a started :class:`Topology` of this
    test's own (for a test that kills, restarts or configures it), stopped at teardown;
    the test fails if an instance printed a traceback, or nginx logged anything worse than
    an error."""
    maker = TopologyMaker(tmp_path)
    yield maker
    maker.close()
    problems = maker.problems()
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def module_topologies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopologyMaker]:
    """Topologies shared by a module's tests that leave them whole (a topology takes
    seconds to start: nginx and 2 x 2 gunicorn workers); stopped after the module."""
    maker = TopologyMaker(tmp_path_factory.mktemp("deploy-shared"))
    yield maker
    maker.close()


def shared(maker: TopologyMaker, topology: Topology) -> Iterator[Topology]:
    """``topology`` for one test: it fails if the test made an instance print a traceback
    (or nginx log worse than an error), as a topology of its own would."""
    before = set(maker.problems())
    yield topology
    new = [problem for problem in maker.problems() if problem not in before]
    assert not new, "\n".join(new)
    assert all(instance.alive for instance in topology.instances), \
        "a test killed an instance of a shared topology: give it a topology of its own"


@pytest.fixture(scope="module")
def shared_balanced(module_topologies: TopologyMaker) -> Topology:
    return module_topologies()


@pytest.fixture
def balanced(module_topologies: TopologyMaker, shared_balanced: Topology) -> Iterator[Topology]:
    """Two instances with one shared request_state_key, memory stores: shared by the
    module's tests (none of them kills an instance; those use ``own_balanced``)."""
    yield from shared(module_topologies, shared_balanced)


@pytest.fixture
def own_balanced(make_topology: MakeTopology) -> Topology:
    """The same as ``balanced``, this test's own: it may kill an instance."""
    return make_topology()
