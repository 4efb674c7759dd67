"""Pieces of ``AsyncGroupConsumer``: a partition's pump record, queue items, the
application's callbacks and the topic column of group batches.

Kept apart from the member's state machine (``group.py``, ``_group_member.py``) so those
read as the protocol; nothing here does I/O except awaiting a callback.
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
    "TopicColumn",
    "GROUP_SCHEMA",
    "CommitCallback",
    "RebalanceCallback",
    "TopicPartition",
    "call_back",
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


class TopicColumn:
    """Puts the ``topic`` column in front of one topic's consumer batches
    (``CONSUMER_SCHEMA`` -> ``GROUP_SCHEMA``).

    This runs for every batch a member hands out: the column is built once (from buffers,
    grown when a larger batch comes) and each batch gets a zero-copy slice of it.
    """

    def __init__(self, topic: str) -> None:
        self._raw = topic.encode()
        self._column = self._build(0)

    def _build(self, n: int) -> pa.Array:
        width = len(self._raw)
        offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
        return pa.Array.from_buffers(
            pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(self._raw * n)]
        )

    def add(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with the topic column first."""
        n = batch.num_rows
        if n > len(self._column):
            self._column = self._build(max(n, 2 * len(self._column)))
        return batch.add_column(0, TOPIC_FIELD, self._column.slice(0, n))


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

    ``pump`` None: an error of the membership or of a callback, raised by the next pull;
    with no error either, only a wake-up (the reader's end condition may have changed).
    """

    pump: Pump | None
    batch: pa.RecordBatch | None = None
    error: BaseException | None = None
    #: the partition's position once ``batch`` is handed out (the pump's consumer knows it,
    #: so the hand-out reads no offset column)
    next_offset: int = 0
