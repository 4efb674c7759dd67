"""Delivery futures from threads and from asyncio."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest

from spark_stream.client.producer.futures import BatchFuture, DeliveryFuture
from spark_stream.client.types import BatchMetadata, RecordMetadata
from spark_stream.errors import NotLeaderError, RequestTimeoutError


def test_record_offsets_follow_the_batch_base() -> None:
    batch: concurrent.futures.Future[BatchMetadata] = concurrent.futures.Future()
    futures = [DeliveryFuture(batch, i) for i in range(3)]
    assert not futures[0].done()
    with pytest.raises(RequestTimeoutError):
        futures[0].result(0.01)
    seen: list[RecordMetadata] = []
    futures[2].add_done_callback(lambda f: seen.append(f.result()))
    batch.set_result(BatchMetadata("t", 1, 40, 3))
    assert [f.result().offset for f in futures] == [40, 41, 42]
    assert seen == [RecordMetadata("t", 1, 42)]


def test_unknown_base_gives_unknown_offsets() -> None:
    batch: concurrent.futures.Future[BatchMetadata] = concurrent.futures.Future()
    batch.set_result(BatchMetadata("t", 0, -1, 2))
    assert DeliveryFuture(batch, 1).result().offset == -1
    assert batch.result().last_offset == -1


def test_errors_surface_typed() -> None:
    batch: concurrent.futures.Future[BatchMetadata] = concurrent.futures.Future()
    batch.set_exception(NotLeaderError("moved"))
    future = DeliveryFuture(batch, 0)
    assert isinstance(future.exception(), NotLeaderError)
    with pytest.raises(NotLeaderError):
        BatchFuture([batch]).result()


def test_awaitable_from_asyncio() -> None:
    a: concurrent.futures.Future[BatchMetadata] = concurrent.futures.Future()
    b: concurrent.futures.Future[BatchMetadata] = concurrent.futures.Future()

    async def main() -> tuple[RecordMetadata, list[BatchMetadata]]:
        loop = asyncio.get_running_loop()
        loop.call_later(0.01, a.set_result, BatchMetadata("t", 0, 10, 5))
        loop.call_later(0.02, b.set_result, BatchMetadata("t", 1, 0, 1))
        record = await DeliveryFuture(a, 4)
        batches = await BatchFuture([a, b])
        return record, batches

    record, batches = asyncio.run(main())
    assert record.offset == 14
    assert [m.partition for m in batches] == [0, 1]
    assert BatchFuture([a, b]).done() and BatchFuture([a, b]).count == 2


def test_batch_future_timeout() -> None:
    pending: concurrent.futures.Future[BatchMetadata] = concurrent.futures.Future()
    with pytest.raises(RequestTimeoutError):
        BatchFuture([pending]).result(0.01)
