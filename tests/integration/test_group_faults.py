"""Consumer-group members as real processes under faults (T2-T4 of the brief; T9 at
the member).

Real Redis, SC and 3 SPUs (``group_faults.group_cluster``), a topic of 6 partitions and
a producer writing into all of them throughout; each member is a ``group_member_proc``
child that records what it hands out and commits after every batch. Every test ends
with Z1 from the SPUs' gate audit files.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from spark_stream.client import AsyncGroupConsumer, Fluvio, FluvioAsync
from spark_stream.local.cluster import LocalCluster
from spark_stream.protocol import control as c
from tests.integration.group_faults import (
    Producer,
    assert_no_overlapping_grants,
    duplicates,
    group_cluster,
    read_everything,
)
from tests.integration.group_member_proc import MemberProc, Output, members
from tests.integration.helpers import make_topic, unique
from tests.polling import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with group_cluster(Path(tmp_path_factory.mktemp("group-faults"))) as running:
        yield running


@pytest.fixture
def fluvio(cluster: LocalCluster) -> Iterator[Fluvio]:
    with Fluvio.connect(cluster.endpoint, timeout=20) as client:
        yield client


def split_among(procs: list[MemberProc], n: int) -> list[list[int]] | None:
    """The members' partitions once ``n`` of them own all 6, disjoint, loads within 1."""
    parts = [proc.output().parts() for proc in procs]
    owned = [p for p in parts if p]
    flat = [p for ps in owned for p in ps]
    if len(owned) != n or sorted(flat) != list(range(PARTITIONS)):
        return None
    sizes = [len(p) for p in owned]
    return parts if max(sizes) - min(sizes) <= 1 else None


def records_of(outputs: list[Output]) -> list[tuple[int, int]]:
    return [r for out in outputs for r in out.records]


def test_three_members_split_six_partitions_two_each(
    cluster: LocalCluster, fluvio: Fluvio, tmp_path: Path
) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS)
    group = unique("g")
    with (
        Producer(fluvio, topic, PARTITIONS) as producer,
        members(cluster.endpoint, topic, group, tmp_path, 3) as procs,
    ):
        wait_until(lambda: split_among(procs, 3), 30, "a 2/2/2 split")
        assert sorted(len(proc.output().parts()) for proc in procs) == [2, 2, 2]
        described = fluvio.admin().describe_group(group)
        holders = {(a["partition"], a["memberId"]) for a in described.group["status"]["assignment"]}
        by_member = {proc.output().member: proc.output().parts() for proc in procs}
        assert holders == {(p, m) for m, ps in by_member.items() for p in ps}
        producer.stop()
        outputs = read_everything(procs, fluvio, topic, PARTITIONS)
    assert duplicates(records_of(outputs)) == set()
    assert assert_no_overlapping_grants(cluster) > 0


def test_graceful_leave_no_duplicate_no_gap(
    cluster: LocalCluster, fluvio: Fluvio, tmp_path: Path
) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS)
    group = unique("g")
    with (
        Producer(fluvio, topic, PARTITIONS) as producer,
        members(cluster.endpoint, topic, group, tmp_path, 3) as procs,
    ):
        wait_until(lambda: split_among(procs, 3), 30, "a 2/2/2 split")
        leaving = procs[0]
        wait_until(lambda: len(leaving.output().records) > 0, 30, "the leaver to read")
        assert leaving.terminate() == 0
        assert leaving.output().events[-1]["ev"] == "closed"
        wait_until(lambda: split_among(procs[1:], 2), 30, "a 3/3 split")
        producer.stop()
        outputs = read_everything(procs, fluvio, topic, PARTITIONS)
    assert duplicates(records_of(outputs)) == set()
    assert all(not out.errors() for out in outputs)
    assert assert_no_overlapping_grants(cluster) > 0


def test_member_sigkill_no_gap_duplicates_only_in_its_uncommitted_window(
    cluster: LocalCluster, fluvio: Fluvio, tmp_path: Path
) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS)
    group = unique("g")
    # The victim commits every 4th batch only, so its uncommitted window is wide.
    victim_args = ("--commit-ms", "0", "--commit-every", "4")
    with (
        Producer(fluvio, topic, PARTITIONS) as producer,
        members(cluster.endpoint, topic, group, tmp_path, 3, *victim_args) as procs,
    ):
        wait_until(lambda: split_among(procs, 3), 30, "a 2/2/2 split")
        dead = procs[0]
        wait_until(lambda: len(dead.output().records) > 0, 30, "the victim to read")
        dead.signal(signal.SIGKILL)
        dead.proc.wait(10)
        wait_until(lambda: split_among(procs[1:], 2), 30, "a 3/3 split")
        producer.stop()
        outputs = read_everything(procs, fluvio, topic, PARTITIONS)
    victim = outputs[0]
    last: dict[int, int] = {}
    for p, o in victim.records:
        last[p] = max(o, last.get(p, -1))
    window = {(p, o) for p in last for o in range(victim.committed.get(p, 0), last[p] + 1)}
    assert duplicates(records_of(outputs)) <= window
    assert all(not out.errors() for out in outputs[1:])
    assert assert_no_overlapping_grants(cluster) > 0


def test_a_member_ignores_a_stale_push_and_reapplies_an_equal_one(
    cluster: LocalCluster, fluvio: Fluvio
) -> None:
    """T9 at the member (the SPU side is in ``tests/spu/test_gates.py`` and
    ``test_gate_wiring.py``): a push older than the applied generation changes nothing;
    an equal one is applied again, a no-op that restarts no pump (no record twice)."""
    topic = make_topic(fluvio, partitions=2)
    group = unique("g")
    producer = fluvio.topic_producer(topic, acks="all")

    def send(p: int, values: list[str]) -> None:
        producer.send_batch(pa.table({"value": values}), partition=p).result(30)

    for p in (0, 1):
        send(p, [f"{p}-{i}" for i in range(3)])

    async def read(member: AsyncGroupConsumer, n: int) -> list[tuple[int, int]]:
        got: list[tuple[int, int]] = []
        async with contextlib.aclosing(member.stream_batches()) as batches:
            async for batch in batches:
                parts, offs = batch.column("partition"), batch.column("offset")
                got.extend(zip(parts.to_pylist(), offs.to_pylist(), strict=True))
                if len(got) >= n:
                    return got
        return got

    async def body() -> None:
        client = await FluvioAsync.connect(cluster.endpoint)
        try:
            member = await client.group_consumer(topic, group=group, auto_offset_reset="earliest")
            assert sorted(await read(member, 6)) == [(p, o) for p in (0, 1) for o in range(3)]
            now = member.generation
            described = await asyncio.to_thread(fluvio.admin().describe_group, group)
            grants = described.group["status"]["assignment"]
            assigned = [
                {"topic": g["topic"], "partition": g["partition"], "grantEpoch": g["grantEpoch"]}
                for g in grants
            ]
            await member._apply(c.GroupAssignment(now - 1, 1, 500, 3000, [], []))
            assert member.generation == now
            assert member.assignment() == [(topic, 0), (topic, 1)]
            await member._apply(c.GroupAssignment(now, 1, 500, 3000, assigned, []))
            assert member.assignment() == [(topic, 0), (topic, 1)]
            assert {member.position(p) for p in (0, 1)} == {3}
            for p in (0, 1):
                await asyncio.to_thread(send, p, [f"{p}-x", f"{p}-y"])
            assert sorted(await read(member, 4)) == [(0, 3), (0, 4), (1, 3), (1, 4)]
            await member.close()
        finally:
            await client.close()

    asyncio.run(asyncio.wait_for(body(), 60))
    producer.close()
    assert assert_no_overlapping_grants(cluster) > 0
