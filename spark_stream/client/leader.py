"""Requests to partition leaders with failover: find the leader, call, retry on retriable.

Theory of operation. ``LeaderClient.call`` asks the metadata watcher for the leader,
takes the pooled connection and sends the request (a factory builds it per attempt for
the leader it goes to: a fetch carries that leader's epoch). A typed error with
``retriable`` set is retried after an exponential backoff until ``retries`` or the
deadline run out: after ``NotLeaderError``, ``UnknownPartitionError`` or a dead
connection the failed SPU is passed to the next leader lookup (which waits briefly for
the SC to publish a new one, and waits out a partition whose replicas all went offline,
which a fresh lookup refuses at once) and a dead connection is dropped from the pool;
after ``FencedLeaderEpochError`` the lookup waits briefly for metadata with a newer
leader epoch; ``UnknownLeaderEpochError`` (the SPU has not heard of the election yet)
and ``GateNotReadyError`` retry within 10-50 ms. An SPU that has not yet been told of a
partition the metadata lists (a new topic, a partition just added) and holds nothing
else of its topic answers ``UnknownTopicError``: ``from_leader`` makes that the
retriable ``UnknownPartitionError``, since the SC says the partition exists.
An attempt in flight is also given up the moment the metadata stops naming its SPU
leader (another SPU leads, or the SPU went offline: ``replaced``): it fails with
``NotLeaderError`` and is retried like one, so requests to a hung leader fail over when
the SC replaces it, not after their request timeout (an idempotent producer's retry is
deduplicated by its sequence numbers). Non-retriable errors surface at once, typed:
among them the lookup's own verdicts on a partition that will not get a leader by
itself (``MetadataView.no_leader_problem``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from spark_stream.backoff import BackoffPolicy
from spark_stream.client.metadata import Leader, MetadataView, MetadataWatcher
from spark_stream.client.pool import ConnectionPool
from spark_stream.errors import (
    ConnectionClosedError,
    FencedLeaderEpochError,
    FluvioError,
    GateNotReadyError,
    NotLeaderError,
    OffsetNotAvailableError,
    RequestTimeoutError,
    UnknownLeaderEpochError,
    UnknownPartitionError,
    UnknownTopicError,
)
from spark_stream.net.connection import Connection
from spark_stream.net.stream import Stream
from spark_stream.protocol import Message

__all__ = [
    "RetryPolicy",
    "LeaderClient",
    "retry_backoff",
    "lookup_hints",
    "from_leader",
    "replaced",
]

log = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)

#: Errors after which the leader is looked up again, avoiding the SPU that failed.
LEADER_ERRORS = (NotLeaderError, UnknownPartitionError, ConnectionClosedError)

#: Waits before retrying a group fetch the leader's delivery gate was not ready for:
#: the SC's gate update is tens of milliseconds away, so 10 ms doubling up to 50 ms.
GATE_RETRY_S = (0.01, 0.05)

#: Errors whose cure is an SC push or a metadata update tens of milliseconds away: the
#: retry waits ``GATE_RETRY_S`` (a fenced epoch's lookup waits for the metadata itself).
SHORT_RETRY_ERRORS = (
    GateNotReadyError,
    FencedLeaderEpochError,
    UnknownLeaderEpochError,
    OffsetNotAvailableError,  # a new leader's followers are about to report
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry.

    Attributes:
        retries: attempts after the first.
        backoff: the delays between attempts (None: retry at once).
        timeout_s: bound on the whole call, retries included.
        request_timeout_s: bound on one attempt.
    """

    retries: int = 10
    backoff: BackoffPolicy | None = BackoffPolicy(0.05, 2.0)
    timeout_s: float = 60.0
    request_timeout_s: float = 30.0

    def delay(self, attempt: int, error: FluvioError | None = None) -> float:
        """The wait before retry ``attempt`` (0 for the first retry) after ``error``.

        ``SHORT_RETRY_ERRORS`` (a gate or a leader epoch not there yet) wait at most
        ``GATE_RETRY_S`` (10 ms doubling up to 50 ms): the cure is on its way and the
        member's fetch should not stall.
        """
        wait = 0.0 if self.backoff is None else self.backoff.delay(attempt)
        if isinstance(error, SHORT_RETRY_ERRORS):
            first, ceiling = GATE_RETRY_S
            return min(wait, first * 2 ** min(attempt, 8), ceiling)
        return wait


def from_leader(exc: FluvioError, view: MetadataView, topic: str, partition: int) -> FluvioError:
    """The error a leader's refusal stands for, given what the metadata knows.

    ``UnknownTopicError`` from an SPU means only that it holds nothing of the topic (it
    cannot know more, ``docs/decisions.md``); when the metadata lists the partition, the
    SPU has not been told of it yet, so it becomes the retriable ``UnknownPartitionError``.
    Any other error is returned as it is.
    """
    if isinstance(exc, UnknownTopicError) and partition < (view.partition_count(topic) or 0):
        return UnknownPartitionError(f"{exc} (yet: the SC lists {topic}-{partition})")
    return exc


def lookup_hints(exc: FluvioError, leader: Leader | None) -> tuple[int | None, int | None]:
    """What the next leader lookup should avoid after ``leader`` failed with ``exc``:
    ``(not_spu, stale_epoch)`` for ``MetadataWatcher.leader``."""
    if leader is None:
        return None, None
    not_spu = leader.spu_id if isinstance(exc, LEADER_ERRORS) else None
    stale = leader.leader_epoch if isinstance(exc, FencedLeaderEpochError) else None
    return not_spu, stale


def replaced(current: Leader | None, spu_id: int) -> bool:
    """Whether the metadata's ``current`` leader of a partition means a request in flight
    to SPU ``spu_id`` should fail over: another SPU leads, or none is reachable (the SC
    marked it offline)."""
    return current is None or current.spu_id != spu_id


def _replaced_error(topic: str, partition: int, spu_id: int) -> NotLeaderError:
    return NotLeaderError(
        f"{topic}-{partition}: the metadata replaced leader SPU {spu_id} while a request "
        "was in flight"
    )


def retry_backoff(initial_ms: float, maximum_ms: float) -> BackoffPolicy | None:
    """The backoff a client config asks for: ``initial_ms`` doubling up to ``maximum_ms``.

    The configs allow what a ``BackoffPolicy`` refuses, with the same meaning as ever:
    a first delay above the ceiling waits the ceiling, and a zero retries at once (None).
    """
    initial, maximum = initial_ms / 1000.0, maximum_ms / 1000.0
    if min(initial, maximum) <= 0:
        return None
    return BackoffPolicy(min(initial, maximum), maximum)


class LeaderClient:
    """Sends requests to partition leaders through a pool, with failover and retries."""

    def __init__(self, watcher: MetadataWatcher, pool: ConnectionPool) -> None:
        self.watcher = watcher
        self.pool = pool
        # Attempts in flight and the leader each went to; one the metadata replaces is
        # cancelled (``_leaders_changed``) and fails with ``NotLeaderError`` at once.
        self._attempts: dict[asyncio.Task[Message], tuple[str, int, int]] = {}
        self._moved: set[asyncio.Task[Message]] = set()
        self._streams: dict[Stream, tuple[str, int, int]] = {}
        watcher.add_listener(self._leaders_changed)

    def _leaders_changed(self, view: MetadataView) -> None:
        for attempt, (topic, partition, spu_id) in self._attempts.items():
            if not attempt.done() and replaced(view.leader(topic, partition), spu_id):
                self._moved.add(attempt)
                attempt.cancel()
        for stream, (topic, partition, spu_id) in list(self._streams.items()):
            if replaced(view.leader(topic, partition), spu_id):
                stream.fail(_replaced_error(topic, partition, spu_id))

    @contextlib.contextmanager
    def failing_over(
        self, stream: Stream, topic: str, partition: int, leader: Leader
    ) -> Iterator[None]:
        """While inside, ``stream`` (opened to ``leader``) ends with ``NotLeaderError`` as
        soon as the metadata names another leader, as a request in flight does."""
        if replaced(self.watcher.view.leader(topic, partition), leader.spu_id):
            stream.fail(_replaced_error(topic, partition, leader.spu_id))
        self._streams[stream] = (topic, partition, leader.spu_id)
        try:
            yield
        finally:
            self._streams.pop(stream, None)

    async def _attempt(
        self,
        conn: Connection,
        msg: Message,
        timeout: float,  # noqa: ASYNC109 - the connection's typed RequestTimeoutError
        topic: str,
        partition: int,
        leader: Leader,
    ) -> Message:
        """One request to ``leader``, given up as soon as the metadata names another (a
        hung leader's requests would otherwise wait out their timeout).

        Raises:
            NotLeaderError: the metadata replaced ``leader`` before the reply came.
        """
        if replaced(self.watcher.view.leader(topic, partition), leader.spu_id):
            raise NotLeaderError(f"the metadata no longer names SPU {leader.spu_id} leader")
        attempt = asyncio.get_running_loop().create_task(conn.call(msg, timeout=timeout))
        self._attempts[attempt] = (topic, partition, leader.spu_id)
        try:
            return await attempt
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if attempt in self._moved and (current is None or not current.cancelling()):
                raise _replaced_error(topic, partition, leader.spu_id) from None
            raise
        finally:
            self._attempts.pop(attempt, None)
            self._moved.discard(attempt)
            if not attempt.done():
                attempt.cancel()

    async def connection(
        self,
        topic: str,
        partition: int,
        timeout: float,  # noqa: ASYNC109
        *,
        not_spu: int | None = None,
        stale_epoch: int | None = None,
        failover: bool = False,
    ) -> tuple[Leader, Connection]:
        """The current leader and a connection to it (waits, bounded, for a leader).

        Arguments as ``MetadataWatcher.leader``.
        """
        leader = await self.watcher.leader(
            topic, partition, timeout, not_spu=not_spu, stale_epoch=stale_epoch, failover=failover
        )
        return leader, await self.pool.get(leader)

    async def call(
        self,
        topic: str,
        partition: int,
        request: Message | Callable[[Leader], Message],
        policy: RetryPolicy,
        *,
        retriable: tuple[type[FluvioError], ...] = (),
        leader: Leader | None = None,
        failover: bool = False,
    ) -> Message:
        """Send ``request`` to the leader and return the typed reply, retrying as above.

        Args:
            request: the message, or a factory called per attempt with the leader it
                goes to (e.g. to carry that leader's epoch).
            policy: retries, backoff and time bounds.
            retriable: more error types to retry in this context (e.g. an idempotent
                producer's ``OutOfOrderSequenceError`` while an earlier batch retries).
            leader: send the first attempt to this leader (the caller's snapshot of the
                metadata); later attempts look the leader up again.
            failover: this call retries a request that already failed with a retriable
                error, so its leader lookups wait even for a partition whose replicas are
                all offline (a restart), as every lookup after a leader error does.

        Raises:
            FluvioError: a non-retriable error, or the last retriable one when attempts
                or time ran out.
        """
        deadline = time.monotonic() + policy.timeout_s
        not_spu: int | None = None
        stale_epoch: int | None = None
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestTimeoutError(
                    f"request to {topic}-{partition} not done within {policy.timeout_s}s"
                )
            conn: Connection | None = None
            try:
                if attempt == 0 and leader is not None:
                    conn = await self.pool.get(leader)
                else:
                    leader, conn = await self.connection(
                        topic,
                        partition,
                        remaining,
                        not_spu=not_spu,
                        stale_epoch=stale_epoch,
                        failover=failover,
                    )
                msg = request(leader) if callable(request) else request
                if log.isEnabledFor(logging.DEBUG):
                    log.debug(
                        "%s %s-%d -> leader SPU %d at %s:%d (epoch %d, attempt %d)",
                        type(msg).__name__,
                        topic,
                        partition,
                        leader.spu_id,
                        leader.host,
                        leader.port,
                        leader.leader_epoch,
                        attempt + 1,
                    )
                timeout = min(policy.request_timeout_s, max(0.001, deadline - time.monotonic()))
                return await self._attempt(conn, msg, timeout, topic, partition, leader)
            except FluvioError as raised:
                exc = from_leader(raised, self.watcher.view, topic, partition)
                retry = (exc.retriable or isinstance(exc, retriable)) and attempt < policy.retries
                if retry and isinstance(exc, ConnectionClosedError) and conn is not None:
                    self.pool.discard(conn)
                delay = policy.delay(attempt, exc) if retry else 0.0
                if not retry or time.monotonic() + delay >= deadline:
                    if exc is raised:
                        raise
                    raise exc from raised
                not_spu, stale_epoch = lookup_hints(exc, leader)
                log.info(
                    "retrying %s-%d in %.3fs (retry %d of %d) after %s: %s",
                    topic,
                    partition,
                    delay,
                    attempt + 1,
                    policy.retries,
                    type(exc).__name__,
                    exc,
                )
                attempt += 1
                await asyncio.sleep(delay)  # retry backoff
