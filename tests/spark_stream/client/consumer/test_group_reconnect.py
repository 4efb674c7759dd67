"""Group members through an SC SIGKILL and restart (member state machine step 5): no
generation bump, no partition moves, records keep flowing during the outage, commits
retried; the SPUs' gate audits show no overlapping grants (Z1)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.launcher import process_alive
from spu.gate_audit import overlapping_grants, read_audit_file
from tests.integration.helpers import make_topic, unique
from tests.polling import until
from tests.sc.groups.member import RawMember
from tests.spark_stream.client.consumer.test_group import (
    PARTITIONS,
    Seen,
    exactly_once,
    produce,
    read,
    split,
)

pytestmark = pytest.mark.integration

AUDIT = "gate-audit.jsonl"
SPUS = (5001, 5002)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster of 2 custom SPUs that write their gate audits to ``AUDIT``."""
    data_dir = Path(tmp_path_factory.mktemp("group-reconnect"))
    running = LocalCluster(
        data_dir,
        spus=len(SPUS),
        sc_port=0,
        spu_mode="custom",
        start_timeout=60.0,
        stop_timeout=10.0,
        profile=data_dir / "profile.json",
        env={"FLUVIO_SPU_GATE_AUDIT_FILE": AUDIT},
    )
    try:
        running.start()
        yield running
    finally:
        running.stop()


def test_members_ride_out_an_sc_restart(fluvio: Fluvio, cluster: LocalCluster) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=2)
    produce(fluvio, topic, 5)
    group = unique()

    async def scenario(core: FluvioAsync) -> None:
        opts = {"group": group, "auto_offset_reset": "earliest", "auto_commit_interval_ms": 200}
        a = await core.group_consumer(topic, **opts)
        b = await core.group_consumer(topic, **opts)
        await until(lambda: split([a, b]), 20.0, "a 2/2 split")
        seen: list[Seen] = [[], []]
        tasks = [
            asyncio.create_task(read(m, s, lambda: False))
            for m, s in zip((a, b), seen, strict=True)
        ]
        await until(lambda: len(seen[0]) + len(seen[1]) >= 4 * 5, 30.0, "first rows")
        generation, owned = a.generation, [a.assignment(), b.assignment()]

        pid = process_alive(cluster.pid_file("sc"))
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await until(lambda: process_alive(cluster.pid_file("sc")) is None, 10.0, "SC dead")
        # The SPUs keep serving the members: records produced now are read now.
        await asyncio.to_thread(produce, fluvio, topic, 3, "outage")
        await until(lambda: len(seen[0]) + len(seen[1]) >= 4 * 8, 30.0, "rows in the outage")
        commit_later = asyncio.create_task(a.commit())  # waits for the SC, then commits

        await asyncio.to_thread(cluster.start)  # same ports, same Redis
        await commit_later
        for m in (a, b):
            await until(
                lambda m=m: all(m.position(tp) == 8 for tp in m.assignment()),
                10.0,
                "positions",
            )
            await m.commit()
            assert [await m.committed(tp) for tp in m.assignment()] == [8, 8]
        assert (a.generation, b.generation) == (generation, generation)
        assert [a.assignment(), b.assignment()] == owned

        await asyncio.to_thread(produce, fluvio, topic, 2, "after")
        await until(lambda: len(seen[0]) + len(seen[1]) >= 4 * 10, 30.0, "rows after")
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        exactly_once(seen[0] + seen[1], dict.fromkeys(range(PARTITIONS), 10))
        await a.close()
        await b.close()

    fluvio.run(scenario(fluvio.core), timeout=180)
    assert_no_overlapping_grants(cluster)


def assert_no_overlapping_grants(cluster: LocalCluster) -> None:
    """Z1 from the SPUs' gate audits (every test of the module so far)."""
    logs = [read_audit_file(cluster.spu_dir(spu) / AUDIT, spu, None) for spu in SPUS]
    assert sum(len(log.changes) for log in logs) > 0
    assert overlapping_grants(logs) == []


def test_a_takeover_of_the_member_calls_on_lost_then_on_assign(
    fluvio: Fluvio, cluster: LocalCluster
) -> None:
    topic = make_topic(fluvio, partitions=2, replication=1)
    produce_to(fluvio, topic, 3)

    async def scenario(core: FluvioAsync) -> None:
        events: list[tuple[str, list[tuple[str, int]]]] = []
        a = await core.group_consumer(
            topic,
            group=unique(),
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            on_assign=lambda tps: events.append(("assign", tps)),
            on_revoke=lambda tps: events.append(("revoke", tps)),
            on_lost=lambda tps: events.append(("lost", tps)),
        )
        everything = [(topic, 0), (topic, 1)]
        seen: Seen = []
        reading = asyncio.create_task(read(a, seen, lambda: False))
        await until(lambda: len(seen) >= 6, 20.0, "rows read")
        await a.commit()
        # Another connection resumes this member (a zombie's double): the SC fences a's
        # connection and re-stamps the grants. a reconnects and takes them back: its
        # grants changed epoch, so they were lost and are assigned again.
        port = int(cluster.endpoint.rsplit(":", 1)[1])
        double = RawMember(port, a.group, [topic], member_id=a.member_id)
        owned = [{"topic": t, "partition": p} for t, p in everything]
        await double.join(member_epoch=a.member_epoch, owned=owned)

        def told(kind: str) -> set[tuple[str, int]]:
            return {tp for k, tps in events[1:] if k == kind for tp in tps}

        await until(lambda: told("assign") == set(everything), 20.0, "assigned again")
        assert events[0] == ("assign", everything)
        assert told("lost") == set(everything)  # (a partition may be re-stamped twice)
        assert told("revoke") == set()
        await asyncio.to_thread(produce_to, fluvio, topic, 2)
        await until(lambda: len(seen) >= 10, 20.0, "rows after the takeover")
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        exactly_once(seen, {0: 5, 1: 5})  # restarted at the committed offsets
        await double.close()
        await a.close()

    fluvio.run(scenario(fluvio.core), timeout=120)
    assert_no_overlapping_grants(cluster)


def produce_to(fluvio: Fluvio, topic: str, count: int) -> None:
    """``count`` records into each of ``topic``'s 2 partitions."""
    producer = fluvio.topic_producer(topic, acks="all")
    for p in range(2):
        for i in range(count):
            producer.send(None, f"{p}-{i}", partition=p).result(30)
    producer.close()
