"""Past one machine: a network partition between hosts, not a crash.

Redis, the SC, three SPUs and the client each run in their own network namespace on one
bridge (``tests.harness.netns``), reaching each other only through their addresses. A
topic with two partitions, replication 3 and ``min_in_sync_replicas`` 1 or 2 takes
``acks=all`` writes; then the link of partition 0's leader is cut (its veth down; every
process keeps running):

- a producer next to the cut-off leader (in its namespace, so it still reaches it)
  sends an ``acks=all`` request: the leader cannot replicate it and must not acknowledge
  it (a typed error: the request times out while the followers are still in force, as
  they stay with ``min_in_sync_replicas=1`` since the SC never accepts the leader's
  shrink; ``NotEnoughReplicasError`` if a shrink below the minimum took effect);
- the SC, which lost the leader's heartbeats, elects a new leader among the connected
  SPUs, and the client produces through it;
- the link comes back: the old leader rejoins as a follower, truncates the suffix it
  appended but never committed (the probe's records) and catches up.

Every acknowledged record is read back exactly once, in order, through the network and
from every replica's files; the probe's records are nowhere. Counts are printed.

Needs root (``CAP_NET_ADMIN``): without it the test skips, saying why.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.netns import NetnsLab, netns_problem
from tests.harness.netns_cluster import NetnsCluster, replica_values

pytestmark = [pytest.mark.integration, pytest.mark.netns, pytest.mark.timeout(600)]

TOPIC = "netns"
PARTITIONS = 2
SPUS = [5001, 5002, 5003]
PER_ROUND = 100


@pytest.fixture
def lab() -> Iterator[NetnsLab]:
    problem = netns_problem()
    if problem is not None:
        pytest.skip(f"cannot create network namespaces: {problem}")
    with NetnsLab() as created:
        yield created


@pytest.fixture
def cluster(lab: NetnsLab, tmp_path: Path) -> Iterator[NetnsCluster]:
    running = NetnsCluster(
        lab, tmp_path, SPUS, spu_settings={"replica_max_lag_ms": 3000}, heartbeat_timeout_s=3.0
    )
    try:
        yield running.start()
    finally:
        running.close()


class Ledger:
    """What was sent and acknowledged, per partition, in send order."""

    def __init__(self) -> None:
        self.sent: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
        self.acked: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
        self.failures: list[str] = []

    def produce(self, cluster: NetnsCluster, partition: int, tag: str, timeout_ms: int) -> int:
        """Send ``PER_ROUND`` records; return how many were acknowledged."""
        assert cluster.client is not None
        values = [f"p{partition}-{tag}-{i:04d}" for i in range(PER_ROUND)]
        self.sent[partition] += values
        result = cluster.client.call(
            "produce",
            timeout=timeout_ms / 1000 + 60,
            topic=TOPIC,
            partition=partition,
            values=values,
            timeout_ms=timeout_ms,
        )
        self.acked[partition] += result["acked"]
        self.failures += [f"{v}: {e}" for v, e in result["failed"]]
        return len(result["acked"])


def partitions(cluster: NetnsCluster) -> list[dict[str, Any]]:
    assert cluster.client is not None
    parts: list[dict[str, Any]] = cluster.client.call("partitions", topic=TOPIC)
    return sorted(parts, key=lambda p: p["name"])


def leader_of(cluster: NetnsCluster, partition: int) -> int | None:
    """The partition's leader once it is online and has reported; None before."""
    parts = partitions(cluster)
    if len(parts) <= partition:
        return None  # the SC has not created it yet
    part = parts[partition]
    online = part["resolution"] == "Online" and part["leader"] in part["replicas"]
    return part["leader"] if online else None


@pytest.mark.parametrize("min_isr", [1, 2])
def test_partitioned_leader_acknowledges_nothing_and_loses_nothing(
    cluster: NetnsCluster, lab: NetnsLab, min_isr: int
) -> None:
    client = cluster.client
    assert client is not None
    client.call("create_topic", topic=TOPIC, partitions=PARTITIONS, replication=3, min_isr=min_isr)
    client.wait(
        lambda: all(
            leader_of(cluster, p) is not None and len(partitions(cluster)[p]["replicas"]) == 3
            for p in range(PARTITIONS)
        ),
        60,
        "every partition online with 3 replicas",
    )
    ledger = Ledger()

    # the round trip across hosts
    for p in range(PARTITIONS):
        assert ledger.produce(cluster, p, "before", 30_000) == PER_ROUND, ledger.failures
        read = client.call("read", topic=TOPIC, partition=p)
        assert [v for _, v in read] == ledger.acked[p]

    old = leader_of(cluster, 0)
    assert old is not None
    old_host = cluster.spu_hosts[old]
    neighbour = cluster.client_in(old_host)  # same namespace as the leader: still reaches it
    lab.cut(old_host.name)
    probe_values = [f"p0-probe-{i}" for i in range(5)]
    probe = neighbour.call(
        "probe",
        host=old_host.address,
        port=9005,
        topic=TOPIC,
        partition=0,
        values=probe_values,
        timeout_ms=5000,
    )
    print(f"\nprobe to the partitioned leader {old}: {probe}")
    assert probe["acked"] is False, f"the cut-off leader acknowledged acks=all: {probe}"
    assert "NotEnoughReplicasError" in probe["error"] or "RequestTimeoutError" in probe["error"]

    client.wait(
        lambda: leader_of(cluster, 0) not in (None, old), 90, f"a leader of partition 0 != {old}"
    )
    new = leader_of(cluster, 0)
    for p in range(PARTITIONS):
        assert ledger.produce(cluster, p, "during", 30_000) == PER_ROUND, ledger.failures

    lab.heal(old_host.name)
    cluster.wait_online(set(SPUS), 90)

    def caught_up() -> bool:
        part = partitions(cluster)[0]
        return part["leader"] == new and part["in_sync"].get(str(old)) == part["leo"]

    client.wait(caught_up, 90, f"SPU {old} back as a follower of partition 0")
    for p in range(PARTITIONS):
        assert ledger.produce(cluster, p, "after", 30_000) == PER_ROUND, ledger.failures

    read_back = {p: [v for _, v in client.call("read", topic=TOPIC, partition=p)] for p in range(2)}
    sent = sum(map(len, ledger.sent.values())) + len(probe_values)
    acked = sum(map(len, ledger.acked.values()))
    print(
        f"netns partition: sent {sent} (probe {len(probe_values)}), acknowledged {acked}, "
        f"read back {sum(map(len, read_back.values()))}; partition 0 leader {old} -> {new}"
    )
    for p in range(PARTITIONS):
        assert read_back[p] == ledger.acked[p]  # every acknowledged record once, in order

    # every replica's files agree once the SPUs stopped: the old leader truncated the
    # probe's records it appended but never committed
    for spu in cluster.spus.values():
        spu.stop()
    for spu_id, spu in cluster.spus.items():
        for p in range(PARTITIONS):
            copy = replica_values(spu, TOPIC, p)
            assert copy == ledger.acked[p], f"SPU {spu_id} partition {p}"
