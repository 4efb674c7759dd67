"""While the cluster's Redis is down, admin calls fail fast with a typed retriable error.

Before the fix the SC retried every KV call of an admin request for its 30 s reconnect
timeout, so a client waiting 20 s got ``RequestTimeoutError`` and learnt nothing about
the cause. The assertions are on the error's type; the client's 20 s request timeout and
the test timeout only guard against a hang.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio
from spark_stream.client.admin import AdminClient
from spark_stream.errors import KvUnavailableError
from spark_stream.local.cluster import LocalCluster
from spark_stream.supervision import running, terminate
from tests.integration.helpers import make_topic, running_cluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path, spus=1) as started:
        yield started


def test_admin_calls_fail_fast_while_redis_is_down(cluster: LocalCluster) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio)
    record = running(cluster.pid_file("redis"))
    assert record is not None
    terminate(record, 10.0, name="redis", sig=signal.SIGKILL)
    host, port = cluster.endpoint.rsplit(":", 1)
    admin = AdminClient(host, int(port), timeout=20.0)

    async def calls() -> list[BaseException]:
        errors: list[BaseException] = []
        async with admin:
            for call in (
                admin.list_topics,
                lambda: admin.create_topic("while-redis-is-down", partitions=1),
                lambda: admin.describe_topic(topic),
            ):
                try:
                    await call()
                except Exception as exc:  # compared below
                    errors.append(exc)
        return errors

    errors = asyncio.run(calls())
    assert [type(e) for e in errors] == [KvUnavailableError] * 3, errors
    assert all(e.retriable for e in errors)
