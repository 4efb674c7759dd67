"""Small async helpers for KV tests: sample objects and bounded event collection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from sc.kv import KvStore, WatchEvent
from spark_stream.models import (
    Partition,
    PartitionSpec,
    Spu,
    SpuGroup,
    SpuGroupSpec,
    SpuGroupStatus,
    SpuSpec,
    Topic,
    TopicSpec,
)


def topic(name: str, partitions: int = 1) -> Topic:
    """A computed topic with ``partitions`` partitions, factor 1."""
    return Topic.new(name, TopicSpec(partitions=partitions))


def partition(topic_name: str, index: int, leader: int = 1) -> Partition:
    """Partition ``index`` of ``topic_name`` on SPU ``leader`` alone."""
    spec = PartitionSpec(initial_leader=leader, replicas=(leader,))
    return Partition.new(topic_name, index, spec)


def spu(spu_id: int) -> Spu:
    """A custom SPU named ``spu-{id}``."""
    return Spu.new(f"spu-{spu_id}", SpuSpec(spu_id=spu_id))


#: How long a test waits for watch events before failing.
EVENT_WAIT = 10.0


async def take(events: AsyncIterator[WatchEvent], count: int) -> list:
    """The next ``count`` events of a watch, failing the test if they do not come in time."""

    async def collect() -> list:
        out = []
        async for event in events:
            out.append(event)
            if len(out) == count:
                break
        return out

    return await asyncio.wait_for(collect(), EVENT_WAIT)


# -- consumer groups -------------------------------------------------------------------

#: The group tests' stand-in kind: ``ConsumerGroup`` is registered by the group models;
#: the group methods work on an object of any kind (``kind=``).
GROUP = "SpuGroup"

#: Member ids (canonical lowercase UUIDs).
MEMBER_A = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01"
MEMBER_B = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a02"


def group(name: str) -> SpuGroup:
    """A stand-in group object (an SPU group) named ``name``."""
    return SpuGroup.new(name, SpuGroupSpec(replicas=0))


def plan(generation: int) -> SpuGroupStatus:
    """A stand-in group status telling plans apart by ``generation``."""
    return SpuGroupStatus(reason=f"generation {generation}")


async def topic_with_partitions(store: KvStore, name: str, partitions: int) -> None:
    """Create a topic and its partition objects (commits need the partition to exist)."""
    await store.create(topic(name, partitions))
    for index in range(partitions):
        await store.create(partition(name, index))
