"""One real local cluster (3 SPUs) per test module, and a client connected to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from tests.integration.helpers import running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A running cluster for the module (custom SPUs 5001-5003)."""
    with running_cluster(tmp_path_factory.mktemp("cluster"), spus=3) as running:
        yield running


@pytest.fixture(scope="module")
def fluvio(cluster: LocalCluster) -> Iterator[Fluvio]:
    """A blocking client on the module's cluster."""
    client = Fluvio.connect(cluster.endpoint, timeout=20.0)
    try:
        yield client
    finally:
        client.close()
