"""A partition leader SIGKILLed while a group reads (T7 of the brief), real processes.

RF 3, two member processes, a producer throughout. The gates move with leadership: the
SC sends the new leader the partition's gates with the push that makes it leader, so the
group does not rebalance (same generation, same grants) and each member resumes at its
exact next offset: no gap, no duplicate. The new leader's audit file shows the same
grant (member, grant epoch) it had on the old leader, and Z1 holds across the logs
(the killed SPU's ends at the kill).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_stream.client import Fluvio
from spark_stream.local.cluster import LocalCluster
from spu.gate_audit import read_audit_file
from tests.harness.local_cluster import kill_spu
from tests.integration.group_faults import (
    AUDIT,
    Producer,
    assert_no_overlapping_grants,
    duplicates,
    group_cluster,
    read_everything,
)
from tests.integration.group_member_proc import members
from tests.integration.helpers import make_topic, unique
from tests.polling import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 6


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with group_cluster(tmp_path / "cluster") as running:
        yield running


def test_leader_sigkill_moves_the_gates_without_a_rebalance(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=PARTITIONS, replication=3, min_in_sync_replicas=2)
        group = unique("g")

        def status() -> dict[str, Any]:
            status: dict[str, Any] = fluvio.admin().describe_group(group).group["status"]
            return status

        def plan() -> set[tuple[int, str, int]]:
            return {
                (g["partition"], g["memberId"], g["grantEpoch"]) for g in status()["assignment"]
            }

        with (
            Producer(fluvio, topic, PARTITIONS) as producer,
            members(cluster.endpoint, topic, group, tmp_path / "members", 2) as procs,
        ):
            wait_until(lambda: all(len(p.output().parts()) == 3 for p in procs), 30, "a 3/3 split")
            wait_until(lambda: all(len(p.output().records) > 20 for p in procs), 30, "both reading")
            before, grants = status()["generation"], plan()
            leaders: dict[int, int] = {}
            for info in fluvio.topic_partitions(topic):
                assert info.leader is not None
                leaders[info.partition] = info.leader
            victim = max(set(leaders.values()), key=list(leaders.values()).count)
            moved = {p for p, spu in leaders.items() if spu == victim}
            assert kill_spu(cluster, victim)
            killed_ns = time.monotonic_ns()

            def new_leaders() -> bool:
                infos = fluvio.topic_partitions(topic)
                return all(i.leader not in (None, victim) for i in infos)

            wait_until(new_leaders, 30, "new leaders")
            sent = producer.sent
            wait_until(lambda: producer.sent > sent + 30, 30, "produce after the failover")
            producer.stop()
            read_everything(procs, fluvio, topic, PARTITIONS)
            after_leaders = {i.partition: i.leader for i in fluvio.topic_partitions(topic)}
            assert status()["generation"] == before  # a leader change is no rebalance
            assert plan() == grants
            outputs = [p.output() for p in procs]
    records = [r for out in outputs for r in out.records]
    assert duplicates(records) == set()  # exact-offset resume
    assert all(not out.errors() for out in outputs)
    assert all(
        not any("starts over" in msg or "fenced" in msg for msg in out.logs()) for out in outputs
    )
    # The new leaders hold the same grants the old one did (audit of gate changes).
    for p in moved:
        new = after_leaders[p]
        assert new is not None
        log = read_audit_file(cluster.spu_dir(new) / AUDIT, new)
        held = {
            (c.member, c.grant_epoch)
            for c in log.changes
            if (c.group, c.topic, c.partition) == (group, topic, p)
            and c.member is not None
            and c.generation <= before  # not the members' teardown (they are killed)
        }
        assert held == {(m, e) for q, m, e in grants if q == p}
    assert assert_no_overlapping_grants(cluster, {victim: killed_ns}) > 0
