"""The producer's sender: drains the accumulator to partition leaders on the event loop.

Theory of operation. One main task owns linger timing: it sleeps until woken (a draft
opened or a batch became ready, possibly from another thread through
``call_soon_threadsafe``) or until the oldest draft's linger expires, seals expired
drafts, and kicks the worker of every partition with queued batches. One worker task
per partition keeps up to ``max_in_flight`` produce requests outstanding, taking READY
batches from the head of its queue in order (an idempotent producer sends one frame per
request, so a duplicate verdict applies to exactly one frame).

A request that fails with a retriable error enters *recovery*: the partition's worker
stops sending new requests, the failed request waits until every earlier request of
the partition has settled, then retries through ``LeaderClient`` (new leader on
``NotLeaderError`` or a dead connection, backoff, bounded by the delivery timeout).
Requests in flight all go to one leader: when the metadata names a new one, the
worker lets what went to the old leader settle before sending there. So frames reach
a new leader in sequence order, and retried frames are resent byte for
byte (same producer id and sequence): an idempotent leader drops what it already holds,
and ``DuplicateSequenceError`` counts as delivered. A later request refused with
``OutOfOrderSequenceError`` because an earlier one failed is retried the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import time
from collections import deque

from spark_stream.client.config import ProducerConfig
from spark_stream.client.leader import LeaderClient, RetryPolicy, retry_backoff
from spark_stream.client.metadata import Leader
from spark_stream.client.producer.accumulator import Accumulator, ProducerBatch
from spark_stream.errors import (
    ClientClosedError,
    DuplicateSequenceError,
    FluvioError,
    OutOfOrderSequenceError,
    RequestTimeoutError,
)
from spark_stream.protocol import Message
from spark_stream.protocol.data import Acks, ProduceRequest, ProduceResponse

__all__ = ["Sender"]

log = logging.getLogger(__name__)


class Sender:
    """Runs the delivery tasks of one producer on the current event loop."""

    def __init__(self, topic: str, config: ProducerConfig, leaders: LeaderClient) -> None:
        self.topic = topic
        self.config = config
        self.leaders = leaders
        self.accumulator: Accumulator | None = None
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._wakeup = asyncio.Event()
        self._space = asyncio.Event()
        self._kicks: dict[int, asyncio.Event] = {}
        self._workers: dict[int, asyncio.Task[None]] = {}
        self._lanes: dict[int, _Lane] = {}
        self._delivering: set[asyncio.Task[None]] = set()
        self._order: dict[int, list[asyncio.Event]] = {}
        self._recovering: dict[int, int] = {}
        self._main: asyncio.Task[None] | None = None
        self._closed = False
        self._direct = config.linger_ms == 0  # see ``wake``

    def start(self, accumulator: Accumulator) -> None:
        """Attach the accumulator and start the main task."""
        self.accumulator = accumulator
        self._main = self._loop.create_task(self._run(), name=f"sender-{self.topic}")

    def wake(self) -> None:
        """Tell the main task there is new work; safe from any thread.

        At linger 0 on the loop's own thread, the sender does not wait for its main
        task: a partition with nothing in flight gets its request started here (the
        record goes to the socket at the next loop turn, not two turns later), and a
        busy one gets its worker kicked (its ``take`` seals the open draft), so records
        appended while requests are in flight still share a frame.
        """
        if threading.get_ident() == self._thread:
            if self._direct and self._kick_pending():
                return
            self._wakeup.set()
            return
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            self._loop.call_soon_threadsafe(self._wakeup.set)

    def _kick_pending(self) -> bool:
        """Start the request of every idle partition with work and kick the worker of
        every busy one; False if one has no worker yet (the main task starts it)."""
        for partition in self._acc.pending_partitions():
            kick = self._kicks.get(partition)
            if kick is None:
                return False
            lane = self._lanes[partition]
            while lane.inflight and lane.inflight[0].done():
                lane.inflight.popleft()
            if lane.inflight or self._recovering.get(partition):
                kick.set()
            else:
                self._fill(partition, lane, kick)
        return True

    async def wait_for_space(self, timeout: float) -> None:  # noqa: ASYNC109 - typed error
        """Wait (on the loop) until the accumulator is below ``buffer_memory``.

        Raises:
            RequestTimeoutError: no space within ``timeout``.
        """
        acc = self._acc
        deadline = time.monotonic() + timeout
        while not acc.has_space() and not acc.closed:
            self._space.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestTimeoutError(
                    f"producer buffer ({self.config.buffer_memory} bytes) still full "
                    f"after {timeout}s"
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._space.wait()

    @property
    def _acc(self) -> Accumulator:
        assert self.accumulator is not None, "Sender.start() not called"
        return self.accumulator

    async def _run(self) -> None:
        acc = self._acc
        while True:
            next_deadline = acc.seal_expired(time.monotonic())
            for partition in acc.ready_partitions():
                self._kick(partition)
            timeout = None if next_deadline is None else max(0.0, next_deadline - time.monotonic())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()
            self._wakeup.clear()

    def _kick(self, partition: int) -> None:
        kick = self._kicks.get(partition)
        if kick is None:
            kick = self._kicks[partition] = asyncio.Event()
            self._lanes[partition] = _Lane()
            self._workers[partition] = self._loop.create_task(
                self._worker(partition, kick), name=f"sender-{self.topic}-{partition}"
            )
        kick.set()

    async def _worker(self, partition: int, kick: asyncio.Event) -> None:
        lane = self._lanes[partition]
        while True:
            kick.clear()
            self._fill(partition, lane, kick)
            await kick.wait()

    def _fill(self, partition: int, lane: _Lane, kick: asyncio.Event) -> None:
        """Start requests of ``partition``'s ready batches, up to ``max_in_flight``."""
        acc, cfg = self._acc, self.config
        per_request = 1 if cfg.idempotence else 1_000_000
        inflight = lane.inflight
        order = self._order.setdefault(partition, [])
        view = self.leaders.watcher.view
        while inflight and inflight[0].done():
            inflight.popleft()
        while len(inflight) < cfg.max_in_flight and not self._recovering.get(partition):
            leader = view.leader(self.topic, partition)
            if inflight and (leader is None or leader != lane.pinned):
                break  # the leader moved: let what went to the old one settle first
            batches = acc.take(partition, cfg.max_request_bytes, per_request)
            if not batches:
                break
            lane.pinned = leader  # where the requests in flight went
            marker = asyncio.Event()
            order.append(marker)
            task = self._loop.create_task(self._deliver(partition, batches, kick, marker, leader))
            self._delivering.add(task)
            task.add_done_callback(self._delivering.discard)
            inflight.append(task)

    def _policy(self, batches: list[ProducerBatch]) -> RetryPolicy:
        cfg = self.config
        age = time.monotonic() - min(b.created for b in batches)
        return RetryPolicy(
            retries=cfg.retries,
            backoff=retry_backoff(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms),
            timeout_s=max(0.001, cfg.delivery_timeout_ms / 1000.0 - age),
            request_timeout_s=cfg.request_timeout_ms / 1000.0,
        )

    async def _deliver(
        self,
        partition: int,
        batches: list[ProducerBatch],
        kick: asyncio.Event,
        marker: asyncio.Event,
        leader: Leader | None,
    ) -> None:
        acc, cfg = self._acc, self.config
        frames = [b.frame for b in batches if b.frame is not None]
        request = ProduceRequest(
            self.topic, partition, cfg.acks, timeout_ms=int(cfg.request_timeout_ms), tail=frames
        )
        retriable: tuple[type[FluvioError], ...] = (
            (OutOfOrderSequenceError,) if cfg.idempotence else ()
        )
        try:
            first = dataclasses.replace(self._policy(batches), retries=0)
            try:
                reply = await self.leaders.call(
                    self.topic, partition, request, first, retriable=retriable, leader=leader
                )
            except FluvioError as exc:
                if not (exc.retriable or isinstance(exc, retriable)) or cfg.retries == 0:
                    raise
                reply = await self._recover(partition, request, batches, retriable, marker)
        except DuplicateSequenceError:
            for batch in batches:
                acc.complete(batch, -1)
        except asyncio.CancelledError:
            for batch in batches:
                acc.fail(batch, ClientClosedError(f"producer for {self.topic!r} closed"))
            raise
        except FluvioError as exc:
            for batch in batches:
                acc.fail(batch, exc)
        except Exception as exc:  # never leave a delivery future unsettled
            log.exception("produce to %s-%d failed", self.topic, partition)
            for batch in batches:
                acc.fail(batch, FluvioError(f"produce failed: {type(exc).__name__}: {exc}"))
        else:
            assert isinstance(reply, ProduceResponse)
            base = reply.base_offset if cfg.acks is not Acks.NONE else -1
            for batch in batches:
                acc.complete(batch, base)
                if base >= 0:
                    base += batch.record_count
        finally:
            marker.set()
            with contextlib.suppress(ValueError):
                self._order[partition].remove(marker)
            self._space.set()
            kick.set()

    async def _recover(
        self,
        partition: int,
        request: ProduceRequest,
        batches: list[ProducerBatch],
        retriable: tuple[type[FluvioError], ...],
        marker: asyncio.Event,
    ) -> Message:
        """Retry a failed request in order: after every earlier request settled.

        While any request of the partition recovers, the worker sends nothing new, so a
        new leader sees the producer's frames in sequence order. Otherwise a later frame
        could reach a leader that does not know the producer yet, be accepted as its
        first, and make the earlier frame look like a duplicate (and be dropped).
        """
        self._recovering[partition] = self._recovering.get(partition, 0) + 1
        try:
            for earlier in list(self._order.get(partition, ())):
                if earlier is marker:
                    break
                await earlier.wait()
            await asyncio.sleep(self.config.retry_backoff_ms / 1000.0)  # retry backoff
            policy = dataclasses.replace(
                self._policy(batches), retries=max(0, self.config.retries - 1)
            )
            return await self.leaders.call(
                self.topic, partition, request, policy, retriable=retriable, failover=True
            )
        finally:
            self._recovering[partition] -= 1
            kick = self._kicks.get(partition)
            if kick is not None:
                kick.set()

    async def close(self) -> None:
        """Stop every task; batches still queued fail with ``FluvioError``. Idempotent."""
        if self._closed:
            return
        self._closed = True
        tasks = [
            t for t in (self._main, *self._workers.values(), *self._delivering) if t is not None
        ]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.accumulator is not None:
            self.accumulator.fail_all(ClientClosedError(f"producer for {self.topic!r} closed"))


@dataclasses.dataclass(slots=True)
class _Lane:
    """One partition's requests in flight (oldest first) and the leader they went to."""

    inflight: deque[asyncio.Task[None]] = dataclasses.field(default_factory=deque)
    pinned: Leader | None = None
