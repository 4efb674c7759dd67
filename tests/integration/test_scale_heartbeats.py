"""1,000 partitions (replication 3 on 3 SPUs): no SPU dropped, no partition left offline.

Real Redis, SC and three SPU processes; the SC drops an SPU silent for 3 s (half the
default, so a stall of the size seen before the fix shows on an idle machine too).
Creating the topic pushes 1,000 new replicas to every SPU at once. Before the fix each
SPU opened them on its event loop (4-6 s at load 2-3) and sent no heartbeat meanwhile:
the SC dropped all three, re-elected, and the first SPU back led all 1,000 partitions
(``bench.scale``'s ``heartbeat_drops``). Now:

- the SC's log has no ``spu silent past heartbeat timeout`` and every SPU is Online;
- after every replica is in sync, SIGKILL of the SPU leading the most partitions leaves
  every partition Online under a leader that is alive (bounded wait).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client.admin import AdminClient
from spark_stream.local.cluster import LocalCluster
from spark_stream.models import Partition, PartitionResolution, SpuResolution
from spark_stream.supervision import log_text
from tests.harness.local_cluster import kill_spu
from tests.integration.helpers import running_cluster, unique
from tests.polling import until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

PARTITIONS = 1000
REPLICATION = 3
HEARTBEAT_TIMEOUT_S = 3.0
POLL_S = 0.25
"""Between two listings of the 1,000 partitions (each one is work for the SC)."""
DROP = "spu silent past heartbeat timeout"
"""What the SC logs when it drops an SPU it has not heard from in time."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    env = {"FLUVIO_SC_HEARTBEAT_TIMEOUT_S": str(HEARTBEAT_TIMEOUT_S)}
    with running_cluster(Path(tmp_path_factory.mktemp("scale")), spus=3, env=env) as running:
        yield running


def _admin(cluster: LocalCluster) -> AdminClient:
    host, port = cluster.endpoint.split(",")[0].rsplit(":", 1)
    return AdminClient(host, int(port), timeout=120.0)


def _online(part: Partition, dead: int | None = None) -> bool:
    status = part.status
    return (
        status.resolution == PartitionResolution.ONLINE
        and status.leader is not None
        and status.leader != dead
    )


def _in_sync(part: Partition) -> bool:
    lrs = part.status.lrs
    return len(lrs) == len(part.spec.replicas) and all(r.in_sync for r in lrs)


async def _scenario(cluster: LocalCluster) -> None:
    topic = unique("scale")
    async with _admin(cluster) as admin:
        await admin.create_topic(topic, partitions=PARTITIONS, replication_factor=REPLICATION)

        async def all_in_sync() -> bool:
            await asyncio.sleep(POLL_S)
            parts = await admin.list_partitions(topic)
            return len(parts) == PARTITIONS and all(_online(p) and _in_sync(p) for p in parts)

        await until(all_in_sync, within=240.0, what=f"{PARTITIONS} partitions online, in sync")
        drops = log_text(cluster.log_file("sc")).count(DROP)
        assert drops == 0, f"the SC dropped an SPU {drops} times while the topic was created"
        spus = await admin.list_spus()
        assert len(spus) == 3
        assert all(s.status.resolution == SpuResolution.ONLINE for s in spus), spus

        parts = await admin.list_partitions(topic)
        led = Counter(p.status.leader for p in parts)
        victim, count = led.most_common(1)[0]
        assert victim is not None
        assert kill_spu(cluster, victim)

        async def all_moved() -> list[Partition]:
            await asyncio.sleep(POLL_S)
            parts = await admin.list_partitions(topic)
            return [p for p in parts if not _online(p, dead=victim)]

        async def none_left() -> bool:
            return not await all_moved()

        try:
            await until(none_left, within=120.0, what=f"new leaders for SPU {victim}'s {count}")
        except AssertionError:
            left = await all_moved()
            detail = [(p.name, p.status.resolution, p.status.reason) for p in left[:5]]
            raise AssertionError(f"{len(left)} without an online leader: {detail}") from None


def test_a_thousand_partitions_keep_their_spus_and_survive_a_leader_kill(
    cluster: LocalCluster,
) -> None:
    asyncio.run(_scenario(cluster))
