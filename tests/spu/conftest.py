"""SPU fixtures: real Redis, a real ``python -m sc`` and real ``python -m spu`` processes.

``spu_cluster`` hands a test a factory of ``ProcessCluster`` (see
``tests.harness.processes``): ``async with spu_cluster([1, 2, 3], ...) as cluster``.
Every process a test started is killed by pid when the test ends, whatever happened.
Tests using it are integration tests: mark them ``@pytest.mark.integration``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.harness.processes import ProcessCluster

ClusterFactory = Callable[..., ProcessCluster]


@pytest.fixture
def spu_cluster(redis_url: str, tmp_path: Path) -> Iterator[ClusterFactory]:
    """A factory of SC + SPU process clusters on the session Redis (emptied per test)."""
    made: list[ProcessCluster] = []

    def make(spu_ids: Sequence[int] = (1, 2, 3), **options: Any) -> ProcessCluster:
        cluster = ProcessCluster(redis_url, tmp_path / f"cluster-{len(made)}", spu_ids, **options)
        made.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.close()
