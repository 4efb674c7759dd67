"""The coordinator's plans reach the partition leaders' delivery gates, end to end.

Real Redis, SC and SPU processes: members join through the SC (raw protocol), the SC
publishes the plan, the gate distribution sends it to the leaders, and a group fetch
(version 1) is admitted for the grant holder only, before and after a handoff.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow as pa
import pytest

from spark_stream.client import Fluvio, FluvioAsync
from spark_stream.client.consumer.fetch import GroupFetch
from spark_stream.errors import FencedMemberError
from spark_stream.net.endpoint import parse_endpoint
from tests.integration.gate_audits import AUDIT_ENV, assert_no_overlapping_grants
from tests.integration.helpers import make_topic, running_cluster
from tests.sc.groups.member import RawMember, settle

pytestmark = pytest.mark.integration

GROUP = "billing"


async def _values(
    client: FluvioAsync, topic: str, partition: int, who: tuple[str, int] | None
) -> list[bytes]:
    """Every record of the partition, read as ``who`` = (member id, grant epoch) of a
    group read, or plainly."""
    group = None if who is None else GroupFetch(GROUP, *who)
    values: list[bytes] = []
    async for batch in client.fetch_batches(topic, partition, 0, group=group, local=False):
        values.extend(batch.column("value").to_pylist())
    return values


def test_the_coordinator_plan_opens_the_gates_of_its_grant_holders(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "cluster", spus=2, env=AUDIT_ENV) as cluster:
        with Fluvio.connect(cluster.endpoint) as fluvio:
            topic = make_topic(fluvio, partitions=2)
            producer = fluvio.topic_producer(topic, acks="all")
            for p in (0, 1):
                producer.send_batch(
                    pa.table({"value": [f"{p}-{i}" for i in range(3)]}), partition=p
                ).result(30)
        expected = {p: [f"{p}-{i}".encode() for i in range(3)] for p in (0, 1)}
        port = parse_endpoint(cluster.endpoint).port

        async def body() -> None:
            client = await FluvioAsync.connect(cluster.endpoint)
            a, b = RawMember(port, GROUP, [topic]), RawMember(port, GROUP, [topic])
            try:
                await a.join()
                await b.join()
                await settle([a, b], total=2)
                ((_, pa_), (_, pb)) = (*a.assigned(), *b.assigned())
                grant_a = (a.member_id, a.grant_epoch((topic, pa_)))
                grant_b = (b.member_id, b.grant_epoch((topic, pb)))
                # Each holder reads its partition; another member is fenced there.
                assert await _values(client, topic, pa_, grant_a) == expected[pa_]
                assert await _values(client, topic, pb, grant_b) == expected[pb]
                with pytest.raises(FencedMemberError):
                    await _values(client, topic, pa_, (b.member_id, grant_a[1]))
                # Plain reads never meet a gate.
                assert await _values(client, topic, pa_, None) == expected[pa_]
                # a leaves: b is granted both; a's old grant is refused at the gate.
                await a.leave()
                await b.until(lambda push: len(push.assigned) == 2)
                moved = (b.member_id, b.grant_epoch((topic, pa_)))
                assert await _values(client, topic, pa_, moved) == expected[pa_]
                with pytest.raises(FencedMemberError):
                    await _values(client, topic, pa_, grant_a)
            finally:
                await a.close()
                await b.close()
                await client.close()

        asyncio.run(body())
        assert assert_no_overlapping_grants(cluster) > 0
