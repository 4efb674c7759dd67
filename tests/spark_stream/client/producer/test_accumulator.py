"""The accumulator: batching by size and linger, sequences, ordering, backpressure."""

from __future__ import annotations

import threading

import pytest

from spark_stream.client.config import ProducerConfig
from spark_stream.client.producer.accumulator import RECORD_OVERHEAD, Accumulator, BatchState
from spark_stream.errors import FluvioError, RecordTooLargeError
from spark_stream.records import decode_frame, read_header


class Wakes:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def make(**options: object) -> tuple[Accumulator, Wakes]:
    wakes = Wakes()
    cfg = ProducerConfig.from_options(**options)
    pid = 42 if cfg.idempotence else None
    return Accumulator("t", cfg, pid, wakes), wakes


def test_records_gather_until_linger_then_one_frame() -> None:
    acc, wakes = make(linger_ms=10)
    futures = [acc.append(0, b"k", b"v%d" % i, 1000 + i) for i in range(3)]
    assert wakes.count == 1  # only the draft opening wakes the sender
    assert acc.take(0, 1 << 20, 10) == []  # still an open draft
    deadline = acc.seal_expired(now=0.0)
    assert deadline is not None  # not yet expired at time 0
    assert acc.seal_expired(now=deadline + 1) is None
    batches = acc.take(0, 1 << 20, 10)
    assert len(batches) == 1 and batches[0].record_count == 3
    assert batches[0].state is BatchState.READY
    records = decode_frame(batches[0].frame)
    assert records.column("value").to_pylist() == [b"v0", b"v1", b"v2"]
    acc.complete(batches[0], 100)
    assert [f.result(1).offset for f in futures] == [100, 101, 102]
    assert acc.queued_bytes == 0 and acc.unfinished == 0


def test_full_batch_is_sealed_and_encoded_by_the_appender() -> None:
    acc, wakes = make(batch_size=3 * (RECORD_OVERHEAD + 2), linger_ms=10_000)
    for i in range(3):
        acc.append(1, None, b"v%d" % i, i)
    assert wakes.count == 2  # opened, then sealed
    batches = acc.take(1, 1 << 20, 10)
    assert [b.record_count for b in batches] == [3]


def test_idempotent_sequences_are_record_based_per_partition() -> None:
    acc, _ = make(idempotence=True, linger_ms=0)
    for i in range(5):
        acc.append(0, None, b"x", i)
    acc.seal_all()
    acc.append(0, None, b"y", 9)
    acc.append(1, None, b"z", 9)
    acc.seal_all()
    p0 = acc.take(0, 1 << 20, 10)
    p1 = acc.take(1, 1 << 20, 10)
    assert [(b.sequence, b.record_count) for b in p0] == [(0, 5), (5, 1)]
    assert [b.sequence for b in p1] == [0]
    header = read_header(p0[1].frame)
    assert (header.producer_id, header.sequence) == (42, 5)


def test_non_idempotent_frames_carry_no_producer_id() -> None:
    acc, _ = make()
    acc.append(0, None, b"x", 1)
    acc.seal_all()
    header = read_header(acc.take(0, 1 << 20, 10)[0].frame)
    assert (header.producer_id, header.sequence) == (-1, -1)


def test_reserved_frames_keep_queue_order_and_block_until_filled() -> None:
    acc, _ = make(idempotence=True)
    acc.append(0, None, b"a", 1)  # an open draft is sealed ahead of the bulk frames
    reserved = acc.reserve(0, [10, 20], [100, 200])
    assert [b.sequence for b in reserved] == [1, 11]
    first = acc.take(0, 1 << 20, 10)
    assert [b.record_count for b in first] == [1]  # stops at the frame being encoded
    acc.fill(reserved[1], b"frame-2")
    assert acc.take(0, 1 << 20, 10) == []  # head still encoding: order is kept
    acc.fill(reserved[0], b"frame-1")
    assert [b.frame for b in acc.take(0, 1 << 20, 10)] == [b"frame-1", b"frame-2"]


def test_take_respects_byte_and_batch_limits() -> None:
    acc, _ = make()
    reserved = acc.reserve(0, [1, 1, 1], [10, 10, 10])
    for b in reserved:
        acc.fill(b, b"x" * 100)
    assert len(acc.take(0, 150, 10)) == 1
    assert len(acc.take(0, 10_000, 1)) == 1
    assert len(acc.take(0, 10_000, 10)) == 1


def test_failures_settle_futures_with_the_typed_error() -> None:
    acc, _ = make()
    future = acc.append(0, None, b"x", 1)
    acc.seal_all()
    batch = acc.take(0, 1 << 20, 1)[0]
    acc.fail(batch, RecordTooLargeError("too big"))
    with pytest.raises(RecordTooLargeError):
        future.result(1)
    assert isinstance(future.exception(1), RecordTooLargeError)


def test_record_larger_than_a_request_is_refused() -> None:
    acc, _ = make(max_request_bytes=100)
    with pytest.raises(RecordTooLargeError):
        acc.append(0, None, b"x" * 200, 1)


def test_fail_all_and_closed_producer() -> None:
    acc, _ = make()
    future = acc.append(0, None, b"x", 1)
    acc.fail_all(FluvioError("closed"))
    with pytest.raises(FluvioError, match="closed"):
        future.result(1)
    with pytest.raises(FluvioError, match="closed"):
        acc.append(0, None, b"x", 1)


def test_backpressure_blocks_until_bytes_are_released() -> None:
    acc, _ = make(buffer_memory=RECORD_OVERHEAD + 10, linger_ms=0)
    acc.append(0, None, b"0123456789", 1)
    assert not acc.has_space()
    assert not acc.wait_for_space(0.01)
    acc.seal_all()
    batch = acc.take(0, 1 << 20, 1)[0]
    released = threading.Timer(0.05, acc.complete, args=(batch, 0))
    released.start()
    try:
        assert acc.wait_for_space(10)
    finally:
        released.join()
    assert acc.has_space()


def test_concurrent_appenders_lose_nothing() -> None:
    acc, _ = make(batch_size=500, linger_ms=0)
    futures: list[object] = []

    def produce(tag: int) -> None:
        futures.extend(acc.append(tag % 2, None, b"%d-%d" % (tag, i), i) for i in range(200))

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    acc.seal_all()
    total = sum(b.record_count for p in (0, 1) for b in acc.take(p, 1 << 30, 10_000))
    assert total == 800


def test_at_linger_zero_take_seals_the_open_draft_with_every_record_so_far() -> None:
    # The sender kicks the worker directly at linger 0; take then seals the draft, so
    # records appended before the worker ran still travel in one frame.
    acc, wakes = make(linger_ms=0)
    futures = [acc.append(0, None, b"v%d" % i, 1000 + i) for i in range(3)]
    assert wakes.count == 1
    batches = acc.take(0, 1 << 20, 10)
    assert [b.record_count for b in batches] == [3]
    assert decode_frame(batches[0].frame).column("value").to_pylist() == [b"v0", b"v1", b"v2"]
    assert acc.take(0, 1 << 20, 10) == []  # nothing left, no empty draft sealed
    acc.complete(batches[0], 7)
    assert [f.result(1).offset for f in futures] == [7, 8, 9]


def test_pending_partitions_name_open_drafts_and_queued_batches() -> None:
    acc, _ = make(linger_ms=0)
    acc.append(2, None, b"a", 1)
    acc.reserve(5, [1], [30])
    assert sorted(acc.pending_partitions()) == [2, 5]
