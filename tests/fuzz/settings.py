"""Hypothesis settings shared by the fuzz tests: derandomized (a fixed seed per test, so
a run is reproducible and CI cannot flake on a new example), no example database, no
deadline (the machine may be loaded), a bounded number of examples.

``MCPSYNC_FUZZ_EXAMPLES=N`` scales every test to N examples for a long local run, and
``MCPSYNC_FUZZ_SHRINK=1`` turns shrinking on to get a minimal reproducer (off by default:
each shrink step is a round trip to a real server).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings


def fuzz_settings(max_examples: int) -> settings:
    phases = [Phase.explicit, Phase.generate]
    if os.environ.get("MCPSYNC_FUZZ_SHRINK"):
        phases.append(Phase.shrink)
    return settings(
        max_examples=int(os.environ.get("MCPSYNC_FUZZ_EXAMPLES", max_examples)),
        deadline=None,
        derandomize=True,
        database=None,
        phases=phases,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )
