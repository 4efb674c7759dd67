"""Group consumers against a real cluster: the split, exactly-once reads with commits,
graceful handover, resuming after a clean close, and the reset policy of a new group."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable

import pyarrow as pa
import pytest

from spark_stream.client import AsyncGroupConsumer, Fluvio, GroupConsumer
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.errors import InvalidConfigError, InvalidRequestError, UnknownTopicError
from spark_stream.local.cluster import LocalCluster
from tests.integration.helpers import make_topic, unique
from tests.polling import until

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_overlapping_grants")]

PARTITIONS = 4
Seen = list[tuple[int, int]]


def produce(
    fluvio: Fluvio, topic: str, per_partition: int, tag: str = "v", one_by_one: bool = False
) -> None:
    """``per_partition`` records into each partition: one batch each, or one per record."""
    producer = fluvio.topic_producer(topic, acks="all")
    for p in range(PARTITIONS):
        values = [f"{tag}{p}-{i}" for i in range(per_partition)]
        for chunk in [[v] for v in values] if one_by_one else [values]:
            producer.send_batch(pa.table({"value": chunk}), partition=p).result()
    producer.close()


def split(members: list[AsyncGroupConsumer]) -> bool:
    owned = [set(m.assignment()) for m in members]
    return all(len(o) == PARTITIONS // len(members) for o in owned) and (
        len(set().union(*owned)) == PARTITIONS
    )


async def read(
    member: AsyncGroupConsumer, seen: Seen, done: Callable[[], bool], pause: float = 0.0
) -> None:
    """Collect ``(partition, offset)`` of every row handed out until ``done()``; ``pause``
    after each batch makes a slow reader."""
    async with contextlib.aclosing(member.stream_batches()) as batches:
        async for batch in batches:
            # Recorded before any await: a reader cancelled at the pause has still been
            # handed the batch, and close() commits past it.
            parts = batch.column("partition").to_pylist()
            seen.extend(zip(parts, batch.column("offset").to_pylist(), strict=True))
            await asyncio.sleep(pause)
            if done():
                return


async def read_until(members: list[AsyncGroupConsumer], seen: list[Seen], total: int) -> None:
    """Read with every member concurrently until ``total`` rows were handed out."""

    def done() -> bool:
        return sum(len(s) for s in seen) >= total

    tasks = [asyncio.create_task(read(m, s, done)) for m, s in zip(members, seen, strict=True)]
    try:
        await until(done, 60.0, f"{total} rows read")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def exactly_once(rows: Seen, ends: dict[int, int], starts: dict[int, int] | None = None) -> None:
    """Every ``(p, offset)`` in ``[starts[p], ends[p])`` exactly once, nothing else."""
    assert len(rows) == len(set(rows)), "a record was handed out twice"
    expected = {(p, o) for p, end in ends.items() for o in range((starts or {}).get(p, 0), end)}
    assert set(rows) == expected


def test_two_members_split_read_exactly_once_and_resume(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=2)
    produce(fluvio, topic, 25)
    group = unique()

    async def scenario(core: FluvioAsync) -> None:
        opts = {"group": group, "auto_offset_reset": "earliest", "enable_auto_commit": False}
        a = await core.group_consumer(topic, **opts)
        b = await core.group_consumer(topic, **opts)
        await until(lambda: split([a, b]), 20.0, "a 2/2 split")
        seen: list[Seen] = [[], []]
        await read_until([a, b], seen, 4 * 25)
        exactly_once(seen[0] + seen[1], dict.fromkeys(range(PARTITIONS), 25))
        await a.commit()
        await b.commit()
        assert [await a.committed(p) for p in range(PARTITIONS)] == [25] * PARTITIONS
        await a.close()
        await b.close()

    fluvio.run(scenario(fluvio.core), timeout=120)

    # A restarted member of the group resumes at the committed offsets: nothing re-read.
    produce(fluvio, topic, 3, tag="w")

    async def resume(core: FluvioAsync) -> None:
        c = await core.group_consumer(topic, group=group, auto_offset_reset="earliest")
        seen: list[Seen] = [[]]
        await read_until([c], seen, 4 * 3)
        exactly_once(seen[0], dict.fromkeys(range(PARTITIONS), 28), dict.fromkeys(range(4), 25))
        await c.close()

    fluvio.run(resume(fluvio.core), timeout=120)


def test_graceful_close_hands_partitions_over_without_dup_or_gap(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=2)
    produce(fluvio, topic, 10)
    group = unique()

    async def scenario(core: FluvioAsync) -> None:
        producer = await core.topic_producer(topic, acks="all")

        async def keep_producing() -> None:
            for i in range(30):
                for p in range(PARTITIONS):
                    await producer.send(None, f"x{p}-{i}", partition=p)
                await producer.flush()
                await asyncio.sleep(0.02)

        a = await core.group_consumer(topic, group=group, auto_offset_reset="earliest")
        b = await core.group_consumer(topic, group=group, auto_offset_reset="earliest")
        await until(lambda: split([a, b]), 20.0, "a 2/2 split")
        given_up = set(a.assignment())
        sending = asyncio.create_task(keep_producing())
        seen: list[Seen] = [[], []]
        tasks = [asyncio.create_task(read(a, seen[0], lambda: False))]
        tasks.append(asyncio.create_task(read(b, seen[1], lambda: False)))
        await until(lambda: len(seen[0]) >= 15, 20.0, "a reads")
        tasks[0].cancel()
        await asyncio.gather(tasks[0], return_exceptions=True)
        await a.close()  # commits, then leaves: b takes a's partitions at those offsets
        everything = {(topic, p) for p in range(PARTITIONS)}
        await until(lambda: set(b.assignment()) == everything, 20.0, "takeover")
        await sending
        await producer.close()
        ends = {p: (await core.fetch_offsets(topic, p)).hw for p in range(PARTITIONS)}
        await until(lambda: len(seen[0]) + len(seen[1]) >= sum(ends.values()), 60.0, "all read")
        tasks[1].cancel()
        await asyncio.gather(tasks[1], return_exceptions=True)
        exactly_once(seen[0] + seen[1], ends)
        assert {(topic, p) for p, _ in seen[1]} >= given_up  # b did read a's partitions
        await b.close()

    fluvio.run(scenario(fluvio.core), timeout=120)


@pytest.mark.parametrize(("reset", "first"), [("earliest", 0), ("latest", 5)])
def test_new_group_starts_per_reset_policy(fluvio: Fluvio, reset: str, first: int) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 5)

    async def scenario(core: FluvioAsync) -> None:
        m = await core.group_consumer(topic, group=unique(), auto_offset_reset=reset)
        await until(
            lambda: all(m.position(p) is not None for p in range(PARTITIONS)), 20.0, "starts"
        )
        assert [m.position(p) for p in range(PARTITIONS)] == [first] * PARTITIONS
        seen: list[Seen] = [[]]
        await asyncio.to_thread(produce, fluvio, topic, 2, "n")
        await read_until([m], seen, PARTITIONS * (7 - first))
        exactly_once(seen[0], dict.fromkeys(range(PARTITIONS), 7), dict.fromkeys(range(4), first))
        await m.close()

    fluvio.run(scenario(fluvio.core), timeout=120)


def test_blocking_group_consumer_reads_commits_and_resumes(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 3)
    group = unique()
    with fluvio.group_consumer(topic, group=group, auto_offset_reset="earliest") as member:
        assert isinstance(member, GroupConsumer)
        assert member.assignment() == [(topic, p) for p in range(PARTITIONS)]
        with member.stream() as records:
            rows = [(r.partition, r.offset) for _, r in zip(range(4 * 3), records, strict=False)]
        exactly_once(rows, dict.fromkeys(range(PARTITIONS), 3))
        member.commit()
        assert [member.committed(p) for p in range(PARTITIONS)] == [3] * PARTITIONS
        assert member.position(0) == 3
    produce(fluvio, topic, 1, tag="n")
    with fluvio.group_consumer(topic, group=group) as again, again.stream() as records:
        rows = [(r.partition, r.offset) for _, r in zip(range(4), records, strict=False)]
    exactly_once(rows, dict.fromkeys(range(PARTITIONS), 4), dict.fromkeys(range(PARTITIONS), 3))


def test_cli_consume_with_group_resumes_where_it_stopped(
    fluvio: Fluvio, cluster: LocalCluster
) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 3)
    group = unique()
    env = {**os.environ, "FLUVIO_ENDPOINT": cluster.endpoint}

    def run(*flags: str) -> subprocess.CompletedProcess[str]:
        args = [sys.executable, "-m", "spark_stream.cli", "consume", topic, "-g", group, "-d"]
        return subprocess.run(
            [*args, *flags], env=env, capture_output=True, text=True, timeout=120, check=False
        )

    def consume(*flags: str) -> list[str]:
        proc = run(*flags)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    refused = run("-T", "0")
    assert refused.returncode != 0
    assert "-g cannot be combined" in refused.stderr

    assert sorted(consume("-B")) == sorted(f"v{p}-{i}" for p in range(PARTITIONS) for i in range(3))
    assert consume() == []  # committed at the end: nothing again
    produce(fluvio, topic, 2, tag="n")
    first = consume("-n", "3")
    rest = consume()
    assert len(first) == 3
    assert sorted(first + rest) == sorted(f"n{p}-{i}" for p in range(PARTITIONS) for i in range(2))


def test_cli_consume_with_a_pattern_reads_every_matching_topic(
    fluvio: Fluvio, cluster: LocalCluster
) -> None:
    prefix = unique()
    topics = [make_topic(fluvio, name=f"{prefix}-{n}", partitions=PARTITIONS) for n in (1, 2)]
    for n, topic in enumerate(topics):
        produce(fluvio, topic, 2, tag=f"t{n}-")
    env = {**os.environ, "FLUVIO_ENDPOINT": cluster.endpoint}

    def run(*flags: str) -> subprocess.CompletedProcess[str]:
        args = [sys.executable, "-m", "spark_stream.cli", "consume", *flags]
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)

    group = ["-g", unique(), "-B", "-d"]
    proc = run("--pattern", f"{prefix}-.*", *group, "-F", "{{topic}} {{value}}")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == sorted(
        f"{topic} t{n}-{p}-{i}"
        for n, topic in enumerate(topics)
        for p in range(PARTITIONS)
        for i in range(2)
    )
    refused = run("--pattern", f"{prefix}-.*", "-B", "-d")
    assert refused.returncode == 2
    assert "error: --pattern needs -g GROUP" in refused.stderr
    refused = run("-g", unique(), "-d")
    assert refused.returncode == 2
    assert "error: the following arguments are required: topic" in refused.stderr


@pytest.mark.parametrize(
    ("topic", "options", "error"),
    [
        (None, {"auto_offset_reset": "newest"}, InvalidConfigError),
        (None, {"auto_commit_interval_ms": 0}, InvalidConfigError),
        (None, {"group": ""}, InvalidRequestError),
        ("no-such-topic", {}, UnknownTopicError),
    ],
)
def test_bad_arguments_get_typed_errors(
    fluvio: Fluvio, topic: str | None, options: dict[str, object], error: type[Exception]
) -> None:
    name = topic or make_topic(fluvio, partitions=1)
    with pytest.raises(error):
        fluvio.group_consumer(name, **{"group": unique(), **options})


def test_revoke_on_join_commits_and_hands_over_without_dup_or_gap(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 20, one_by_one=True)  # 80 batches: a reads slowly, one by one
    group = unique()

    async def scenario(core: FluvioAsync) -> None:
        opts = {"group": group, "auto_offset_reset": "earliest", "enable_auto_commit": False}
        a = await core.group_consumer(topic, **opts)
        seen: list[Seen] = [[], []]
        reading_a = asyncio.create_task(read(a, seen[0], lambda: False, pause=0.05))
        every = set(range(PARTITIONS))
        await until(lambda: {p for p, _ in seen[0]} == every, 20.0, "a reads every partition")
        # a has handed out records of every partition: the 2 it gives up to b must be
        # committed on revoke, or b reads them again from the earliest offset.
        b = await core.group_consumer(topic, **opts)
        reading_b = asyncio.create_task(read(b, seen[1], lambda: False))
        await until(lambda: split([a, b]), 20.0, "a 2/2 split")
        await until(lambda: len(seen[0]) + len(seen[1]) >= 4 * 20, 60.0, "all read")
        for task in (reading_a, reading_b):
            task.cancel()
        await asyncio.gather(reading_a, reading_b, return_exceptions=True)
        exactly_once(seen[0] + seen[1], dict.fromkeys(range(PARTITIONS), 20))
        await a.close()
        await b.close()

    fluvio.run(scenario(fluvio.core), timeout=120)


def test_reading_to_the_end_of_empty_and_full_partitions_ends(fluvio: Fluvio) -> None:
    """A partition granted at its end never sends a batch: the read still ends."""
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    producer = fluvio.topic_producer(topic, acks="all")
    producer.send_batch(pa.table({"value": ["a", "b"]}), partition=1).result()
    producer.close()

    async def scenario(core: FluvioAsync) -> None:
        m = await core.group_consumer(topic, group=unique(), auto_offset_reset="earliest")
        rows: Seen = []
        async with contextlib.aclosing(m.stream_batches(stop_at_end=True)) as batches:
            async for batch in batches:
                rows.extend(
                    zip(
                        batch.column("partition").to_pylist(),
                        batch.column("offset").to_pylist(),
                        strict=True,
                    )
                )
        assert rows == [(1, 0), (1, 1)]
        await m.close()

    fluvio.run(scenario(fluvio.core), timeout=60)


def test_close_ends_a_read_waiting_for_records(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)

    async def scenario(core: FluvioAsync) -> None:
        m = await core.group_consumer(topic, group=unique())
        got: list[pa.RecordBatch] = []

        async def drain() -> None:
            async with contextlib.aclosing(m.stream_batches()) as batches:
                async for batch in batches:
                    got.append(batch)

        reader = asyncio.create_task(drain())
        # pulling with nothing queued: the reader is waiting on the member's queue
        await until(lambda: m._pulling, 10.0, "the reader waits")
        assert not reader.done()
        await m.close()
        await asyncio.wait_for(reader, 10.0)  # ended, not cancelled
        assert got == []

    fluvio.run(scenario(fluvio.core), timeout=60)
