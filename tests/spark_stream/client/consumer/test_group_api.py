"""The group consumer's application API against a real cluster: seek, pause/resume,
rebalance callbacks, commit_async, a multi-topic member's batches, max_poll_interval."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from spark_stream.client import AsyncGroupConsumer, Fluvio, GroupConsumer, Offset
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.errors import InvalidConfigError, InvalidRequestError, OffsetOutOfRangeError
from tests.integration.helpers import make_topic, unique
from tests.polling import until
from tests.spark_stream.client.consumer.test_group import (
    PARTITIONS,
    Seen,
    exactly_once,
    produce,
    read,
    split,
)

pytestmark = pytest.mark.integration

NO_AUTO = {"auto_offset_reset": "earliest", "enable_auto_commit": False}


async def collect(member: AsyncGroupConsumer, count: int) -> Seen:
    """The next ``count`` rows handed out, as ``(partition, offset)``."""
    seen: Seen = []
    task = asyncio.create_task(read(member, seen, lambda: len(seen) >= count))
    try:
        await until(lambda: len(seen) >= count, 30.0, f"{count} rows")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return seen


def test_seek_and_pause_keep_positions_exact(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 10)

    async def scenario(core: FluvioAsync) -> None:
        m = await core.group_consumer(topic, group=unique(), **NO_AUTO)
        exactly_once(await collect(m, 40), dict.fromkeys(range(PARTITIONS), 10))
        await m.seek(0, 3)
        await m.seek((topic, 1), Offset.beginning())
        assert m.position(0) == 3
        rows = await collect(m, 7 + 10)
        exactly_once(rows, {0: 10, 1: 10}, {0: 3, 1: 0})

        await m.pause([0, (topic, 1)])
        assert m.paused() == [(topic, 0), (topic, 1)]
        assert m.assignment() == [(topic, p) for p in range(PARTITIONS)]  # still held
        await asyncio.to_thread(produce, fluvio, topic, 5, "n")
        rows = await collect(m, 2 * 5)  # only the partitions not paused
        exactly_once(rows, {2: 15, 3: 15}, {2: 10, 3: 10})
        assert (m.position(0), m.position(1)) == (10, 10)
        await m.seek(1, Offset.end())  # paused: takes effect on resume
        await m.resume([0, 1])
        assert m.paused() == []
        exactly_once(await collect(m, 5), {0: 15}, {0: 10})
        await until(lambda: m.position(1) == 15, 10.0, "seek to the end resolved")
        with pytest.raises(InvalidRequestError, match="not assigned"):
            await m.seek(PARTITIONS, 0)
        with pytest.raises(InvalidRequestError, match="not assigned"):
            await m.pause([(unique(), 0)])
        await m.close()

    fluvio.run(scenario(fluvio.core), timeout=120)


def test_rebalance_callbacks_run_around_the_handover(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 10)
    group = unique()
    everything = [(topic, p) for p in range(PARTITIONS)]

    async def scenario(core: FluvioAsync) -> None:
        events: list[tuple[str, str, list[tuple[str, int]]]] = []
        held_on_revoke: list[bool] = []

        def callbacks(name: str) -> dict[str, object]:
            async def on_revoke(tps: list[tuple[str, int]]) -> None:
                member = members[name]
                if name == "a":
                    held_on_revoke.append(all(tp in member.assignment() for tp in tps))
                    # the app commits its own offsets: still its grant, so accepted
                    await member.commit({tp: 5 for tp in tps})
                events.append((name, "revoke", tps))

            return {
                "on_assign": lambda tps: events.append((name, "assign", tps)),
                "on_revoke": on_revoke,
            }

        members: dict[str, AsyncGroupConsumer] = {}
        members["a"] = await core.group_consumer(topic, group=group, **NO_AUTO, **callbacks("a"))
        assert events == [("a", "assign", everything)]
        members["b"] = await core.group_consumer(topic, group=group, **NO_AUTO, **callbacks("b"))
        await until(lambda: split(list(members.values())), 20.0, "a 2/2 split")
        moved = members["b"].assignment()
        await until(lambda: ("b", "assign", moved) in events, 10.0, "b's on_assign")
        assert ("a", "revoke", moved) in events
        assert events.index(("a", "revoke", moved)) < events.index(("b", "assign", moved))
        assert held_on_revoke == [True]
        # b starts where a's on_revoke committed, not at the earliest offset
        rows = await collect(members["b"], 2 * 5)
        exactly_once(rows, {p: 10 for _, p in moved}, {p: 5 for _, p in moved})
        await members["b"].close()  # close revokes too, before leaving
        await until(lambda: ("a", "assign", moved) in events, 10.0, "a's on_assign")
        assert events.index(("b", "revoke", moved)) < events.index(("a", "assign", moved))
        await members["a"].close()

    fluvio.run(scenario(fluvio.core), timeout=120)


def test_blocking_callbacks_may_call_the_blocking_consumer(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=2, replication=1)
    produce_two = fluvio.topic_producer(topic, acks="all")
    for p in range(2):
        produce_two.send(None, "x", partition=p).result(30)
    produce_two.close()
    calls: list[tuple[str, object]] = []
    holder: list[GroupConsumer] = []

    def on_revoke(tps: list[tuple[str, int]]) -> None:
        member = holder[0]
        member.commit()  # a blocking call from inside the callback: no deadlock
        calls.append(("revoke", [member.committed(tp) for tp in tps]))

    member = fluvio.group_consumer(
        topic,
        group=unique(),
        on_assign=lambda tps: calls.append(("assign", tps)),
        on_revoke=on_revoke,
        **NO_AUTO,
    )
    holder.append(member)
    assert calls == [("assign", [(topic, 0), (topic, 1)])]  # once the grants started
    with member.stream() as records:
        assert len([r for _, r in zip(range(2), records, strict=False)]) == 2
    member.close()
    assert calls[-1] == ("revoke", [1, 1])


def test_commit_async_reports_through_callback_or_next_commit(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 4)

    async def scenario(core: FluvioAsync) -> None:
        m = await core.group_consumer(topic, group=unique(), **NO_AUTO)
        await collect(m, 4 * 4)
        results: list[tuple[dict[tuple[str, int], int], BaseException | None]] = []
        await m.commit_async(callback=lambda offsets, err: results.append((offsets, err)))
        assert results == [({(topic, p): 4 for p in range(PARTITIONS)}, None)]
        assert await m.committed(0) == 4

        going_back = {(topic, 0): 1}
        await m.commit_async(going_back, lambda offsets, err: results.append((offsets, err)))
        assert results[-1][0] == going_back
        assert isinstance(results[-1][1], OffsetOutOfRangeError)

        await m.commit_async(going_back)  # no callback: the task ends quietly, and ...
        with pytest.raises(OffsetOutOfRangeError):
            await m.commit()  # ... the next commit raises its error
        await m.commit()  # raised once
        assert await m.committed(0) == 4
        await m.close()

    fluvio.run(scenario(fluvio.core), timeout=120)


def test_multi_topic_member_tells_the_topic_of_each_batch(fluvio: Fluvio) -> None:
    topics = [make_topic(fluvio, partitions=1, replication=1) for _ in range(2)]
    for i, topic in enumerate(topics):
        producer = fluvio.topic_producer(topic, acks="all")
        for j in range(3):
            producer.send(None, f"{i}-{j}").result(30)
        producer.close()

    async def scenario(core: FluvioAsync) -> None:
        m = await core.group_consumer(topics, group=unique(), **NO_AUTO)
        rows: list[tuple[str, int, str]] = []

        async def take() -> None:
            async with contextlib.aclosing(m.stream()) as records:
                async for r in records:
                    assert r.topic is not None
                    rows.append((r.topic, r.offset, r.value_str()))
                    if len(rows) == 6:
                        return

        await asyncio.wait_for(take(), 30)
        assert sorted(rows) == sorted(
            (t, j, f"{i}-{j}") for i, t in enumerate(topics) for j in range(3)
        )
        with pytest.raises(InvalidRequestError, match="ambiguous"):
            m.position(0)
        assert [m.position((t, 0)) for t in topics] == [3, 3]
        await m.close()

    fluvio.run(scenario(fluvio.core), timeout=120)
    with (
        fluvio.group_consumer(topics[0], group=unique(), **NO_AUTO) as one,
        one.stream_batches() as batches,
    ):
        batch = next(batches)
        assert batch.schema.names[:3] == ["topic", "partition", "offset"]
        assert set(batch.column("topic").to_pylist()) == {topics[0]}


def test_member_that_stops_pulling_leaves_and_rejoins_on_next_pull(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 5)
    group = unique()

    async def scenario(core: FluvioAsync) -> None:
        opts = {"group": group, "auto_offset_reset": "earliest"}
        a = await core.group_consumer(topic, max_poll_interval_ms=1000, **opts)
        b = await core.group_consumer(topic, **opts)
        await until(lambda: split([a, b]), 20.0, "a 2/2 split")
        first_id, given_up = a.member_id, a.assignment()
        seen: list[Seen] = [await collect(a, 10), []]
        reading_b = asyncio.create_task(read(b, seen[1], lambda: False))
        # a does not pull any more: it leaves (committing what it handed out), b takes all
        everything = [(topic, p) for p in range(PARTITIONS)]
        await until(lambda: b.assignment() == everything, 20.0, "b holds every partition")
        assert a.assignment() == []
        await asyncio.to_thread(produce, fluvio, topic, 2, "n")
        await until(lambda: len(seen[0]) + len(seen[1]) >= 4 * 7, 30.0, "all read")
        exactly_once(seen[0] + seen[1], dict.fromkeys(range(PARTITIONS), 7))
        assert {(topic, p) for p, o in seen[1] if o >= 5} >= set(given_up)
        # the next pull joins again, as a new member
        reading_a = asyncio.create_task(read(a, seen[0], lambda: False))
        await until(lambda: split([a, b]), 20.0, "a 2/2 split again")
        assert a.member_id != first_id
        for task in (reading_a, reading_b):
            task.cancel()
        await asyncio.gather(reading_a, reading_b, return_exceptions=True)
        await a.close()
        await b.close()

    fluvio.run(scenario(fluvio.core), timeout=120)


def test_max_poll_interval_out_of_bounds_is_refused(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=1)
    with pytest.raises(InvalidConfigError, match="max_poll_interval_ms"):
        fluvio.group_consumer(topic, group=unique(), max_poll_interval_ms=10)


def test_blocking_seek_pause_and_commit_async(fluvio: Fluvio) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS, replication=1)
    produce(fluvio, topic, 3)
    with fluvio.group_consumer(topic, group=unique(), **NO_AUTO) as member:
        with member.stream() as records:
            rows = [(r.partition, r.offset) for _, r in zip(range(12), records, strict=False)]
        exactly_once(rows, dict.fromkeys(range(PARTITIONS), 3))
        member.pause([1, 2, 3])
        assert member.paused() == [(topic, p) for p in (1, 2, 3)]
        member.seek(0, 1)
        with member.stream() as records:
            rows = [(r.partition, r.offset) for _, r in zip(range(2), records, strict=False)]
        assert rows == [(0, 1), (0, 2)]
        member.resume([1, 2, 3])
        member.commit_async().result(30)
        assert [member.committed(p) for p in range(PARTITIONS)] == [3] * PARTITIONS
