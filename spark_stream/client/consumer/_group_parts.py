"""Pieces of ``AsyncGroupConsumer``: a partition's pump record, queue items, the
application's callbacks and the topic column of group batches.

Kept apart from the member's state machine (``group.py``) so that file reads as the
protocol; nothing here does I/O except awaiting a callback.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from spark_stream.client.consumer.consumer import CONSUMER_SCHEMA
from spark_stream.client.consumer.offset import Offset

__all__ = [
    "GROUP_SCHEMA",
    "CommitCallback",
    "RebalanceCallback",
    "TopicPartition",
    "call_back",
    "with_topic",
]

TopicPartition = tuple[str, int]
#: ``on_assign`` / ``on_revoke`` / ``on_lost``: called with the partitions, sorted.
RebalanceCallback = Callable[[list[TopicPartition]], Awaitable[None] | None]
#: ``commit_async``'s callback: the offsets sent and the error (None: accepted).
CommitCallback = Callable[[dict[TopicPartition, int], BaseException | None], Awaitable[None] | None]

TOPIC_FIELD = pa.field("topic", pa.string(), nullable=False)
#: Schema of group consumer batches: the topic, then ``CONSUMER_SCHEMA`` (partition,
#: offset, record columns). A member may read several topics, so every batch says which.
GROUP_SCHEMA = pa.schema([TOPIC_FIELD, *CONSUMER_SCHEMA])


def with_topic(batch: pa.RecordBatch, topic: str) -> pa.RecordBatch:
    """A consumer batch (``CONSUMER_SCHEMA``) with the ``topic`` column in front.

    Built from buffers and added in place of a rebuilt batch: this runs for every batch a
    member hands out, and costs about 3 us instead of 17 (``bench/groups.py``).
    """
    n, raw = batch.num_rows, topic.encode()
    offsets = np.arange(0, (n + 1) * len(raw), len(raw), dtype=np.int32)
    column = pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)]
    )
    return batch.add_column(0, TOPIC_FIELD, column)


async def call_back(callback: Callable[..., Awaitable[None] | None], *args: object) -> None:
    """Call a sync or async application callback and wait for it."""
    result = callback(*args)
    if inspect.isawaitable(result):
        await result


@dataclass(eq=False)
class Pump:
    """One partition's fetch task under one grant (identity = this object).

    A seek or a resume replaces the pump (same grant, new start), so batches the old one
    queued are recognised and dropped. ``paused`` and ``revoking`` pumps have no task and
    hand out nothing, but their grant is still held (reported in heartbeats, committable).
    """

    tp: TopicPartition
    grant_epoch: int
    start: Offset | None = None  # None: the committed offset, else the reset policy
    paused: bool = False
    revoking: bool = False
    task: asyncio.Task[None] | None = None
    done: bool = False  # fenced or failed: a later push with this partition relaunches it
    end: int | None = None  # the end visible when this pump's start was resolved

    @property
    def handing_out(self) -> bool:
        """Whether batches this pump queued may be handed out."""
        return not (self.paused or self.revoking)


@dataclass
class Item:
    """One entry of the member's queue: a batch of ``pump``, or an error.

    ``pump`` None: an error of the membership or of a callback, raised by the next pull.
    """

    pump: Pump | None
    batch: pa.RecordBatch | None = None
    error: BaseException | None = None
