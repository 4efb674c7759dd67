"""The producer's record accumulator: per-partition batches, apart from the sender.

Theory of operation. Records appended with ``append`` gather in an open *draft* per
partition. A draft is *sealed* into a ``ProducerBatch`` when it reaches ``batch_size``
bytes, when its linger time passes (``seal_expired``) or on ``seal_all`` (flush), and
the batch joins its partition's FIFO queue. Sealing fixes the batch's idempotent
sequence (record-based: the partition's next sequence, then advanced by the record
count), so queue order is sequence order. A batch moves through three states:

    DRAFT     sealed, its records still Python lists; whoever takes it encodes it
    ENCODING  claimed by one thread that is building its frame (bulk frames start here)
    READY     the encoded batch frame is attached

``take`` hands the sender the READY batches at the head of a queue (claiming and
encoding a DRAFT head itself), and stops at a batch another thread is still encoding,
so frames always leave in queue order. The bulk path ``reserve`` appends batches in
the ENCODING state (sequences fixed) and the caller fills their frames outside the
lock. Everything is guarded by one ``threading.Lock``: the blocking face appends from
user threads while the sender runs on the event loop thread. ``wake`` is called (outside
the lock) when the sender has something new to do: a draft opened (start its linger
timer) or a batch became ready.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum

from spark_stream.client.config import ProducerConfig
from spark_stream.client.producer.futures import DeliveryFuture
from spark_stream.client.types import BatchMetadata
from spark_stream.errors import ClientClosedError, FluvioError, RecordTooLargeError
from spark_stream.records import build_batch, encode_batch
from spark_stream.small_frame import encode_small

__all__ = ["BatchState", "Draft", "ProducerBatch", "Accumulator", "RECORD_OVERHEAD"]

#: Bytes counted per record on top of key and value (timestamp, offsets, validity).
RECORD_OVERHEAD = 24


class BatchState(Enum):
    """Where a sealed batch is on its way to the wire."""

    DRAFT = "draft"
    ENCODING = "encoding"
    READY = "ready"


@dataclass(eq=False, slots=True)
class Draft:
    """Records of one partition gathered by ``append``, not yet encoded."""

    created: float
    future: concurrent.futures.Future[BatchMetadata]
    keys: list[bytes | None] | None = None  # None while every record is keyless
    values: list[bytes] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    headers: list[list[tuple[str, bytes]] | None] | None = None
    nbytes: int = 0


@dataclass(eq=False, slots=True)
class ProducerBatch:
    """One batch frame's worth of records on its way to a partition leader."""

    partition: int
    record_count: int
    sequence: int
    nbytes: int
    future: concurrent.futures.Future[BatchMetadata]
    created: float
    state: BatchState = BatchState.DRAFT
    draft: Draft | None = None
    frame: bytes | None = None


class Accumulator:
    """Per-partition batching with backpressure; thread-safe.

    Args:
        topic: the topic (for delivery metadata).
        config: batch size, linger, compression, idempotence, buffer memory.
        producer_id: the idempotent producer id, or None.
        wake: called, outside the lock, when the sender has new work.
    """

    def __init__(
        self,
        topic: str,
        config: ProducerConfig,
        producer_id: int | None,
        wake: Callable[[], None],
    ) -> None:
        self.topic = topic
        self.config = config
        self.producer_id = producer_id
        self._wake = wake
        self._lock = threading.Lock()
        self._acquire, self._release_lock = self._lock.acquire, self._lock.release
        self._space = threading.Condition(self._lock)
        self._open: dict[int, Draft] = {}
        self._queues: dict[int, deque[ProducerBatch]] = {}
        self._next_seq: dict[int, int] = {}
        self._unfinished: set[concurrent.futures.Future[BatchMetadata]] = set()
        self.queued_bytes = 0
        self.closed = False
        # Read on every append: plain attributes, not two lookups through the config.
        self._max_record = config.max_request_bytes
        self._batch_size = config.batch_size
        self._linger_zero = config.linger_ms == 0

    # -- producing side --------------------------------------------------------------

    def append(
        self,
        partition: int,
        key: bytes | None,
        value: bytes,
        timestamp_us: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> DeliveryFuture:
        """Add one record to ``partition``'s open draft; seal it when full.

        Raises:
            RecordTooLargeError: the record alone passes ``max_request_bytes``.
            FluvioError: the producer is closed.
        """
        # The hot path of ``send``: a few list appends under the lock, nothing per
        # record beyond them (the draft's lists become Arrow arrays once, when encoded).
        # acquire/release, not ``with``: half the cost (~80 ns a record on this path).
        size = (
            len(value) + RECORD_OVERHEAD if key is None else len(value) + len(key) + RECORD_OVERHEAD
        )
        if size > self._max_record:
            raise RecordTooLargeError(
                f"record of {size} bytes passes max_request_bytes {self.config.max_request_bytes}"
            )
        sealed: ProducerBatch | None = None
        self._acquire()
        try:
            if self.closed:
                self._check_open()
            draft = self._open.get(partition)
            wake = draft is None
            if draft is None:
                draft = self._open_draft(partition)
            values = draft.values
            index = len(values)
            values.append(value)
            draft.timestamps.append(timestamp_us)
            if key is not None or draft.keys is not None:
                if draft.keys is None:
                    draft.keys = [None] * index
                draft.keys.append(key)
            if headers is not None or draft.headers is not None:
                if draft.headers is None:
                    draft.headers = [None] * index
                draft.headers.append(headers)
            draft.nbytes += size
            self.queued_bytes += size
            if draft.nbytes >= self._batch_size:
                sealed = self._seal(partition)
                sealed.state = BatchState.ENCODING  # this thread encodes it below
                wake = True
            future = draft.future
        finally:
            self._release_lock()
        if sealed is not None:
            self._encode(sealed)
        if wake:
            self._wake()
        return DeliveryFuture(future, index)

    def reserve(
        self, partition: int, counts: Iterable[int], sizes: Iterable[int]
    ) -> list[ProducerBatch]:
        """Queue batches for pre-built frames (bulk path); the caller then calls ``fill``.

        The partition's open draft is sealed first, so records keep the order in which
        they were handed to the producer.
        """
        out: list[ProducerBatch] = []
        with self._lock:
            self._check_open()
            if partition in self._open:
                self._seal(partition)
            now = time.monotonic()
            for count, size in zip(counts, sizes, strict=True):
                future: concurrent.futures.Future[BatchMetadata] = concurrent.futures.Future()
                batch = ProducerBatch(
                    partition,
                    count,
                    self._take_sequence(partition, count),
                    size,
                    future,
                    now,
                    state=BatchState.ENCODING,
                )
                self._queues.setdefault(partition, deque()).append(batch)
                self._unfinished.add(future)
                self.queued_bytes += size
                out.append(batch)
        return out

    def fill(self, batch: ProducerBatch, frame: bytes) -> None:
        """Attach the encoded frame of a reserved batch (it becomes READY) and wake."""
        with self._lock:
            batch.frame = frame
            batch.state = BatchState.READY
        self._wake()

    def abandon(self, batch: ProducerBatch, error: BaseException) -> None:
        """Remove a queued batch that cannot be encoded and fail it."""
        with self._lock:
            queue = self._queues.get(batch.partition)
            if queue and batch in queue:
                queue.remove(batch)
        self.fail(batch, error)
        self._wake()

    def wait_for_space(self, timeout: float | None) -> bool:
        """Block (a user thread) until queued bytes drop below ``buffer_memory``."""
        with self._space:
            return self._space.wait_for(
                lambda: self.queued_bytes < self.config.buffer_memory or self.closed, timeout
            )

    def has_space(self) -> bool:
        """True while queued bytes are below ``buffer_memory``."""
        return self.queued_bytes < self.config.buffer_memory

    # -- sender side -----------------------------------------------------------------

    def seal_expired(self, now: float) -> float | None:
        """Seal drafts older than ``linger_ms``; return the next draft deadline, if any."""
        linger = self.config.linger_ms / 1000.0
        next_deadline: float | None = None
        with self._lock:
            for partition, draft in list(self._open.items()):
                deadline = draft.created + linger
                if deadline <= now:
                    self._seal(partition)
                elif next_deadline is None or deadline < next_deadline:
                    next_deadline = deadline
        return next_deadline

    def seal_all(self) -> list[concurrent.futures.Future[BatchMetadata]]:
        """Seal every draft (flush); return the futures of everything not yet settled."""
        with self._lock:
            for partition in list(self._open):
                self._seal(partition)
            return list(self._unfinished)

    def ready_partitions(self) -> list[int]:
        """Partitions whose queue is not empty."""
        with self._lock:
            return [p for p, q in self._queues.items() if q]

    def pending_partitions(self) -> list[int]:
        """Partitions with queued batches or an open draft (what ``take`` may serve)."""
        with self._lock:
            return [p for p, q in self._queues.items() if q] + [
                p for p in self._open if not self._queues.get(p)
            ]

    def take(self, partition: int, max_bytes: int, max_batches: int) -> list[ProducerBatch]:
        """Pop READY batches from the head of ``partition``'s queue, up to the limits.

        A DRAFT head is claimed and encoded here first; the first batch another thread
        is still encoding stops the walk. At linger 0, once the queue is empty, the
        partition's open draft is sealed and taken too (the sender then kicks the worker
        directly, without its main task sealing first). At least one batch is taken when
        one is ready.
        """
        taken: list[ProducerBatch] = []
        total = 0
        while len(taken) < max_batches:
            claimed: ProducerBatch | None = None
            with self._lock:
                queue = self._queues.get(partition)
                if not queue:
                    if not self._linger_zero or partition not in self._open:
                        break
                    self._seal(partition)
                    queue = self._queues[partition]
                head = queue[0]
                if head.state is BatchState.READY:
                    assert head.frame is not None
                    if taken and total + len(head.frame) > max_bytes:
                        break
                    queue.popleft()
                    taken.append(head)
                    total += len(head.frame)
                    continue
                if head.state is BatchState.ENCODING:
                    break
                head.state = BatchState.ENCODING
                claimed = head
            self._encode(claimed)
        return taken

    def complete(self, batch: ProducerBatch, base_offset: int) -> None:
        """Settle a delivered batch (``base_offset`` -1 when unknown) and free its bytes."""
        self._release(batch)
        if not batch.future.done():
            batch.future.set_result(
                BatchMetadata(self.topic, batch.partition, base_offset, batch.record_count)
            )

    def fail(self, batch: ProducerBatch, error: BaseException) -> None:
        """Settle a batch with its typed error and free its bytes."""
        self._release(batch)
        if not batch.future.done():
            batch.future.set_exception(error)

    def fail_all(self, error: FluvioError) -> None:
        """Fail everything queued or open (producer closing without delivering)."""
        with self._lock:
            self.closed = True
            for partition in list(self._open):
                self._seal(partition)
            batches = [b for q in self._queues.values() for b in q]
            for q in self._queues.values():
                q.clear()
            self._space.notify_all()
        for batch in batches:
            self.fail(batch, error)

    def close(self) -> None:
        """Refuse further appends."""
        with self._lock:
            self.closed = True
            self._space.notify_all()

    @property
    def unfinished(self) -> int:
        """Batches (and open drafts) not yet settled."""
        with self._lock:
            return len(self._unfinished)

    # -- internals (lock held unless noted) -----------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise ClientClosedError(f"producer for {self.topic!r} is closed")

    def _open_draft(self, partition: int) -> Draft:
        future: concurrent.futures.Future[BatchMetadata] = concurrent.futures.Future()
        draft = self._open[partition] = Draft(time.monotonic(), future)
        self._unfinished.add(future)
        return draft

    def _take_sequence(self, partition: int, count: int) -> int:
        if self.producer_id is None:
            return -1
        seq = self._next_seq.get(partition, 0)
        self._next_seq[partition] = (seq + count) % 2**31
        return seq

    def _seal(self, partition: int) -> ProducerBatch:
        draft = self._open.pop(partition)
        count = len(draft.values)
        batch = ProducerBatch(
            partition,
            count,
            self._take_sequence(partition, count),
            draft.nbytes,
            draft.future,
            draft.created,
            draft=draft,
        )
        self._queues.setdefault(partition, deque()).append(batch)
        return batch

    def _encode(self, batch: ProducerBatch) -> None:
        """Build the frame of a claimed DRAFT batch (lock NOT held), then mark it READY."""
        draft = batch.draft
        assert draft is not None
        producer_id = self.producer_id if self.producer_id is not None else -1
        try:
            frame = None
            if draft.headers is None and self.config.codec == "none":
                # A few records (linger 0, low rates): written without pyarrow.
                frame = encode_small(
                    draft.values,
                    draft.keys,
                    draft.timestamps,
                    producer_id=producer_id,
                    sequence=batch.sequence,
                )
            if frame is None:
                records = build_batch(draft.values, draft.keys, draft.timestamps, draft.headers)
                frame = encode_batch(
                    records,
                    compression=self.config.codec,
                    producer_id=producer_id,
                    sequence=batch.sequence,
                )
        except (ValueError, TypeError, OverflowError) as exc:
            self.abandon(batch, FluvioError(f"cannot encode batch: {exc}"))
            return
        with self._lock:
            batch.frame = frame
            batch.draft = None
            batch.state = BatchState.READY

    def _release(self, batch: ProducerBatch) -> None:
        with self._lock:
            if batch.future in self._unfinished:
                self._unfinished.discard(batch.future)
                self.queued_bytes -= batch.nbytes
                self._space.notify_all()
