"""Property: the memory and Redis stores give the same answers to any group workload.

Hypothesis draws a sequence of group operations (publish, commit, unfenced write,
offset delete, partition delete and re-create, reads); both stores run it and every
answer (value, or error type) must match. Along the way the Z3 rules are checked on the
answers: an accepted commit came from the owner-map entry of that moment, and a stored
offset only moves back through an unfenced write or a delete.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sc.kv import CommitOutcome, Grant, KvStore, MemoryKvStore, OffsetCommit, RedisKvStore
from spark_stream.errors import FluvioError
from spark_stream.local import RedisServer
from tests.sc.kv.helpers import GROUP, MEMBER_A, MEMBER_B, group, partition, plan, topic

pytestmark = pytest.mark.integration

PARTITIONS = [("orders", 0), ("orders", 1), ("audit", 0)]
tps = st.sampled_from(PARTITIONS)
members = st.sampled_from([MEMBER_A, MEMBER_B])
epochs = st.integers(1, 2)
offsets = st.integers(0, 6)

publish = st.tuples(
    st.just("publish"),
    st.dictionaries(tps, st.builds(Grant, members, epochs), min_size=1, max_size=3) | st.just({}),
)
#: ``follow``: take the member and epochs from the owner map (when it has the partition),
#: so that most commits are the rightful owner's and reach the offset checks.
commit = st.tuples(
    st.just("commit"),
    members,
    st.lists(st.tuples(tps, offsets, epochs), max_size=3, unique_by=lambda c: c[0]),
    st.booleans(),
)
write = st.tuples(st.just("write"), st.dictionaries(tps, offsets, max_size=3))
delete_offsets = st.tuples(st.just("delete_offsets"), st.sampled_from([None, "orders", "audit"]))
toggle = st.tuples(st.just("toggle"), tps)
operations = st.lists(st.one_of(publish, commit, write, delete_offsets, toggle), max_size=14)


async def _run(store: KvStore, ops: list[tuple[Any, ...]]) -> list[Any]:
    """Apply ``ops`` to ``store``; return every answer, with Z3 checked on the way."""
    await store.create(topic("orders", 2))
    await store.create(topic("audit", 1))
    for name, index in PARTITIONS:
        await store.create(partition(name, index))
    await store.create(group("g"))
    answers: list[Any] = []
    for op in ops:
        try:
            answers.append(await _apply(store, op))
        except FluvioError as exc:
            answers.append(type(exc).__name__)
        stored = await store.fetch_group_offsets("g")
        answers.append(
            sorted((tp, s.offset, s.grant_epoch, s.metadata) for tp, s in stored.items())
        )
        answers.append(sorted(await store.fetch_group_owners("g")))
    return answers


async def _apply(store: KvStore, op: tuple[Any, ...]) -> Any:
    match op:
        case ("publish", owners):
            current = await store.get(GROUP, "g")
            assert current is not None
            await store.publish_group_plan("g", plan(1), owners, current.revision, kind=GROUP)
            return None
        case ("commit", member, entries, follow):
            owners = await store.fetch_group_owners("g")
            before = await store.fetch_group_offsets("g")
            if follow:
                owned = [owners[tp] for tp, _, _ in entries if tp in owners]
                member = owned[0].member_id if owned else member
                entries = [
                    (tp, off, owners[tp].grant_epoch if tp in owners else ep)
                    for tp, off, ep in entries
                ]
            request = [OffsetCommit(t, p, off, ep, f"m{off}") for (t, p), off, ep in entries]
            results = await store.commit_group_offsets("g", member, request)
            for c, r in zip(request, results, strict=True):
                if r.outcome is CommitOutcome.ACCEPTED:
                    assert owners[c.tp] == (member, c.grant_epoch)
                    assert c.tp not in before or before[c.tp].offset <= c.offset
                elif r.outcome is CommitOutcome.BACKWARDS:
                    assert r.committed == before[c.tp].offset > c.offset
            return [(r.outcome, r.committed) for r in results]
        case ("write", offs):
            await store.write_group_offsets("g", offs, metadata="w", kind=GROUP)
            return None
        case ("delete_offsets", topic_name):
            return await store.delete_group_offsets("g", topic_name)
        case ("toggle", (topic_name, index)):
            name = f"{topic_name}-{index}"
            if await store.get("Partition", name) is None:
                await store.create(partition(topic_name, index))
            else:
                await store.delete("Partition", name)
            return None
    raise AssertionError(op)


@settings(max_examples=100, deadline=None)
@given(ops=operations)
def test_memory_and_redis_agree(redis_server: RedisServer, ops: list[tuple[Any, ...]]) -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        redis = RedisKvStore(redis_server.url, prefix=f"agree-{uuid.uuid4().hex[:8]}")
        memory = MemoryKvStore()
        try:
            return await _run(memory, ops), await _run(redis, ops)
        finally:
            await redis.close()
            await memory.close()

    in_memory, in_redis = asyncio.run(asyncio.wait_for(main(), 30))
    assert in_memory == in_redis
