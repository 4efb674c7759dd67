"""The client's mirror of cluster metadata, fed by the SC's ``WATCH_METADATA`` stream.

Theory of operation. ``MetadataView`` is pure: it applies ``MetadataUpdate`` pushes (a
full snapshot replaces everything, an incremental one upserts and deletes) and answers
lookups: a partition's leader and that leader's public endpoint, a topic's partition
count, and why a partition has no leader: a state that passes (an election, a topic
being provisioned) or one that needs an operator (``no_leader_problem``).
``MetadataWatcher`` owns the stream: one task reads pushes into the view and bumps a
version that waiters poll through an ``asyncio.Condition``. The stream itself
is ``watch_metadata``, also behind ``AdminClient.watch_metadata``: when it or its SC
connection fails, it reconnects with backoff and resumes from the last revision it
delivered (the SC replies with a full snapshot when it no longer holds the changes).
Callers never read a half-applied update: an update is applied in one step on the loop
thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from spark_stream.backoff import BackoffPolicy
from spark_stream.client.types import PartitionInfo
from spark_stream.errors import (
    ConnectionClosedError,
    FluvioError,
    InsufficientResourcesError,
    InvalidConfigError,
    PartitionOfflineError,
    RequestTimeoutError,
    TlsError,
    UnauthorizedError,
    UnknownPartitionError,
    UnknownTopicError,
)
from spark_stream.models import (
    Partition,
    PartitionResolution,
    Spu,
    SpuResolution,
    Topic,
    TopicResolution,
    partition_name,
)
from spark_stream.net.connection import Connection
from spark_stream.net.endpoint import Endpoint
from spark_stream.protocol.control import MetadataUpdate, WatchMetadataRequest

__all__ = [
    "WATCH_BACKOFF",
    "Leader",
    "MetadataView",
    "MetadataWatcher",
    "partition_info",
    "watch_metadata",
]

log = logging.getLogger(__name__)

#: Delays between reconnects of a metadata watch.
WATCH_BACKOFF = BackoffPolicy(0.05, 2.0)


@dataclass(frozen=True, slots=True)
class Leader:
    """A partition leader to send data requests to, and the partition's leader epoch as
    the metadata says (group fetches carry it; the SPU refuses a stale one)."""

    spu_id: int
    host: str
    port: int
    leader_epoch: int = 0


#: Topic states the SC leaves as they are until SPUs join: no partition, so no leader.
_UNPROVISIONED: dict[TopicResolution, type[FluvioError]] = {
    TopicResolution.INSUFFICIENT_RESOURCES: InsufficientResourcesError,
    TopicResolution.INVALID_CONFIG: InvalidConfigError,
}


_UNREGISTERED = "unregistered"
#: SPU states in which a replica can neither lead nor be elected.
_DOWN = (SpuResolution.OFFLINE.value, _UNREGISTERED)


def _leader_id(partition: Partition) -> int | None:
    leader = partition.status.leader
    if leader is None and partition.status.resolution is PartitionResolution.INIT:
        leader = partition.spec.initial_leader  # before the first LRS report
    return leader


def partition_info(partition: Partition, spus_by_id: dict[int, Spu]) -> PartitionInfo:
    """The client view of a stored partition (leader endpoint resolved through the SPUs)."""
    leader = _leader_id(partition)
    endpoint = None
    if leader is not None and (spu := spus_by_id.get(leader)) is not None:
        ep = spu.spec.public_endpoint
        endpoint = str(Endpoint(ep.host, ep.port))
    status = partition.status
    return PartitionInfo(
        topic=partition.topic,
        partition=partition.index,
        leader=leader,
        replicas=tuple(partition.spec.replicas),
        resolution=str(status.resolution.value),
        leader_endpoint=endpoint,
        in_sync=tuple(r.spu_id for r in status.lrs if r.in_sync),
        leo=status.leo,
        hw=status.hw,
        log_start=status.log_start_offset,
    )


class MetadataView:
    """SPUs, topics and partitions as of ``revision`` (pure; no I/O)."""

    def __init__(self) -> None:
        self.revision: int | None = None
        self.spus: dict[str, Spu] = {}
        self.topics: dict[str, Topic] = {}
        self.partitions: dict[str, Partition] = {}
        self._by_id: dict[int, Spu] = {}

    def apply(self, update: MetadataUpdate) -> None:
        """Apply one push.

        Raises:
            InvalidRequestError: an entry does not validate (the view is unchanged).
        """
        spus, topics, partitions = update.objects()
        # Build new tables and swap them in at the end: threads reading the view (the
        # blocking producer's ``send``) never see a half-applied update.
        new_spus = {} if update.full else dict(self.spus)
        new_topics = {} if update.full else dict(self.topics)
        new_parts = {} if update.full else dict(self.partitions)
        new_spus.update((spu.name, spu) for spu in spus)
        new_topics.update((topic.name, topic) for topic in topics)
        new_parts.update((part.name, part) for part in partitions)
        tables: dict[str, dict[str, Any]] = {
            "Spu": new_spus,
            "Topic": new_topics,
            "Partition": new_parts,
        }
        for ref in update.deleted:
            kind, name = ref.get("kind"), ref.get("name")
            table = tables.get(str(kind))
            if table is None or not isinstance(name, str):
                continue
            table.pop(name, None)
            if kind == "Topic":
                for key in [k for k, p in new_parts.items() if p.topic == name]:
                    del new_parts[key]
        self.spus, self.topics, self.partitions = new_spus, new_topics, new_parts
        self._by_id = {spu.spu_id: spu for spu in new_spus.values()}
        self.revision = update.revision

    def spu(self, spu_id: int) -> Spu | None:
        """The SPU with this id, if known."""
        return self._by_id.get(spu_id)

    def partition_count(self, topic: str) -> int | None:
        """How many partitions ``topic`` has (from its spec), None if unknown."""
        found = self.topics.get(topic)
        if found is None:
            return None
        if found.status.replica_map:
            return len(found.status.replica_map)
        return found.spec.partitions

    def partition(self, topic: str, index: int) -> Partition | None:
        """The stored partition object, if known."""
        return self.partitions.get(partition_name(topic, index))

    def topic_partitions(self, topic: str) -> list[PartitionInfo]:
        """Every known partition of ``topic``, by index."""
        parts = [p for p in self.partitions.values() if p.topic == topic]
        parts.sort(key=lambda p: p.index)
        return [partition_info(p, self._by_id) for p in parts]

    def leader(self, topic: str, index: int) -> Leader | None:
        """The partition's leader if it is known and its SPU is online with an endpoint."""
        part = self.partition(topic, index)
        if part is None:
            return None
        spu_id = _leader_id(part)
        spu = self._by_id.get(spu_id) if spu_id is not None else None
        if spu is None or spu.status.resolution is SpuResolution.OFFLINE:
            return None
        ep = spu.spec.public_endpoint
        return Leader(spu.spu_id, ep.host, ep.port, part.status.leader_epoch)

    def _spu_state(self, spu_id: int) -> str:
        """``Online``/``Init``/``Offline`` as the SC sees the SPU, or ``unregistered``."""
        spu = self._by_id.get(spu_id)
        return _UNREGISTERED if spu is None else spu.status.resolution.value

    def topic_problem(self, topic: str, index: int | None = None) -> FluvioError | None:
        """Why ``topic`` cannot be used until SPUs join, or None (also when unknown).

        The SC leaves a topic ``InsufficientResources`` (fewer SPUs than its replication
        factor) or ``InvalidConfig`` (an assignment naming unregistered SPUs) without
        partitions until SPUs are added, so waiting for a leader would only time out.
        ``Init`` and ``Pending`` are not problems: they pass within moments.

        Args:
            index: name this partition in the message.
        """
        found = self.topics.get(topic)
        if found is None:
            return None
        error = _UNPROVISIONED.get(found.status.resolution)
        if error is None:
            return None
        where = "" if index is None else f"partition {topic}-{index} has no leader: "
        state, reason = found.status.resolution.value, found.status.reason or "no reason given"
        return error(f"{where}topic {topic!r} is not provisioned ({state}): {reason}")

    def no_leader_problem(
        self, topic: str, index: int, *, failover: bool = False
    ) -> FluvioError | None:
        """Why the partition has no leader and will not get one by itself, or None.

        Its topic is unprovisioned (``topic_problem``), or every replica is on an SPU
        that is offline or unregistered, so no election can pick a leader. A partition
        whose leader is offline while another replica is online is not a problem: the
        SC is electing (failover).

        Args:
            failover: the caller has just lost this partition's leader. Then all replicas
                offline may be a restart in progress, and only the topic counts.
        """
        problem = self.topic_problem(topic, index)
        part = self.partition(topic, index)
        if problem is not None or failover or part is None:
            return problem
        states = {r: self._spu_state(r) for r in part.spec.replicas}
        if any(state not in _DOWN for state in states.values()):
            return None
        down = ", ".join(
            f"{sorted(r for r, s in states.items() if s == state)} {state.lower()}"
            for state in _DOWN
            if state in states.values()
        )
        return PartitionOfflineError(f"partition {topic}-{index} has no leader: replicas {down}")

    def leader_state(self, topic: str, index: int) -> str:
        """Why the partition has no usable leader now, in words, for error messages."""
        found = self.topics.get(topic)
        part = self.partition(topic, index)
        if part is None:
            state = found.status.resolution.value if found is not None else "unknown"
            return f"the partition is not created yet (topic {state})"
        status = part.status
        leader = _leader_id(part)
        text = f"partition {status.resolution.value}"
        if status.reason:
            text += f" ({status.reason})"
        if leader is None:
            text += ", no leader elected"
        else:
            text += f", leader {leader} {self._spu_state(leader)}"
        replicas = list(part.spec.replicas)
        online = [r for r in replicas if self._spu_state(r) not in _DOWN]
        return f"{text}; replicas {replicas}, online {online}"


async def watch_metadata(
    connect: Callable[[], Awaitable[Connection]],
    from_revision: int | None = None,
    *,
    backoff: BackoffPolicy = WATCH_BACKOFF,
    reconnect: bool = True,
    retry_on: tuple[type[BaseException], ...] = (ConnectionClosedError,),
    on_error: Callable[[BaseException], None] | None = None,
) -> AsyncGenerator[MetadataUpdate, None]:
    """The SC's metadata pushes: a snapshot (unless resuming), then changes, resumed.

    Each attempt streams ``WatchMetadataRequest`` on ``connect()`` from the last revision
    delivered, so a reconnect neither repeats nor loses a change (the SC sends a full
    snapshot when it no longer holds them). The delay between attempts grows under
    ``backoff`` and starts over once an update arrives.

    Args:
        connect: an open connection to the SC's public port; called for every attempt,
            it may return the same connection while that one is open.
        from_revision: resume after this revision (None: start with a snapshot).
        backoff: delays between attempts.
        reconnect: when the stream fails (an error in ``retry_on``) or ends, try again;
            otherwise raise the error or stop.
        retry_on: the errors that mean "reconnect"; the connection is closed first.
        on_error: told of every such error before the wait.

    Raises:
        FluvioError: what ``connect`` or the stream raised, when it is not in
            ``retry_on`` or ``reconnect`` is false (``ConnectionClosedError`` by default).
    """
    revision = from_revision
    state = backoff.start()
    while True:
        conn: Connection | None = None
        try:
            conn = await connect()
            async with await conn.stream(WatchMetadataRequest(revision)) as stream:
                async for push in stream:
                    update = push.message()
                    if isinstance(update, MetadataUpdate):
                        revision = update.revision
                        state.reset()
                        yield update
                    # Let go of the update once the caller asks for the next: a snapshot
                    # of thousands of partitions is then freed while the stream is idle,
                    # not when the next push arrives (its latency would pay for it).
                    del push, update
            if not reconnect:
                return  # the SC ended the stream
            log.info("metadata watch ended by the SC, reopening")
        except retry_on as exc:
            if not reconnect or isinstance(exc, UnauthorizedError):
                raise  # a refused client is refused again: its caller decides
            log.info("metadata watch lost, reconnecting error=%r", exc)
            if on_error is not None:
                on_error(exc)
            if conn is not None:
                await conn.close()
        await state.sleep()  # backoff before reconnecting


class MetadataWatcher:
    """Keeps a ``MetadataView`` current from the SC's metadata stream.

    Args:
        connect: opens a fresh connection to the SC (used at start and on reconnect).
        backoff: delays between reconnect attempts.
        on_error: told of every error that ends a watch attempt (before the reconnect;
            e.g. a standby's ``NotActiveError``, so ``connect`` picks the active SC).
    """

    def __init__(
        self,
        connect: Callable[[], Awaitable[Connection]],
        *,
        backoff: BackoffPolicy = WATCH_BACKOFF,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._on_error = on_error
        self.view = MetadataView()
        self._connect = connect
        self._backoff = backoff
        self._changed = asyncio.Condition()
        self._version = 0
        self._task: asyncio.Task[None] | None = None
        self._conn: Connection | None = None
        self._closed = False
        self._listeners: list[Callable[[MetadataView], None]] = []
        self.last_error: BaseException | None = None
        self._refused = asyncio.Event()  # a TLS failure or a refused token: retrying cannot help

    def add_listener(self, listener: Callable[[MetadataView], None]) -> None:
        """Call ``listener(view)`` on the loop after every applied update (it must not
        block: ``LeaderClient`` uses it to fail over requests to a replaced leader)."""
        self._listeners.append(listener)

    async def start(self, timeout: float) -> None:  # noqa: ASYNC109 - typed error
        """Open the stream and wait for the first snapshot.

        Raises:
            ConnectionClosedError: the SC is unreachable or sent nothing in time.
            TlsError: the SC refused this client's TLS (at once: no retry fixes it).
            UnauthorizedError: the SC refused the client (no token, a bad one, or one
                without the right): at once, not after ``timeout``.
        """
        self._conn = await self._connect()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="metadata-watch")
        try:
            first = self.wait_for(lambda v: v.revision is not None, timeout)
            snapshot = asyncio.ensure_future(first)
            refused = asyncio.ensure_future(self._refused.wait())
            done, _ = await asyncio.wait({snapshot, refused}, return_when=asyncio.FIRST_COMPLETED)
            if snapshot in done:
                refused.cancel()
                snapshot.result()
            else:
                snapshot.cancel()
                await asyncio.gather(snapshot, return_exceptions=True)
                await self.close()
                cause = self.last_error
                if isinstance(cause, UnauthorizedError):
                    raise type(cause)(str(cause))
                raise TlsError(str(cause)) from cause
        except RequestTimeoutError as exc:
            await self.close()
            cause = self.last_error
            raise ConnectionClosedError(
                f"no metadata from the SC within {timeout}s"
                + (f": {cause}" if cause is not None else "")
            ) from exc

    async def _open(self) -> Connection:
        """The watch's connection, reopened once it closed (``close`` closes it)."""
        if self._conn is None or self._conn.closed:
            self._conn = await self._connect()
        return self._conn

    def _failed(self, exc: BaseException) -> None:
        self.last_error = exc
        if self._on_error is not None:
            self._on_error(exc)
        if isinstance(exc, TlsError):
            self._refused.set()

    async def _run(self) -> None:
        pause = self._backoff.start()
        while not self._closed:
            updates = watch_metadata(
                self._open,
                self.view.revision,
                backoff=self._backoff,
                retry_on=(FluvioError, OSError),
                on_error=self._failed,
            )
            try:
                async with contextlib.aclosing(updates):
                    async for update in updates:
                        self.view.apply(update)
                        log.debug(
                            "metadata %s revision=%s deleted=%d",
                            "snapshot" if update.full else "update",
                            update.revision,
                            len(update.deleted),
                        )
                        pause.reset()
                        del update  # freed now, not when the next push arrives
                        await self._notify()
            except UnauthorizedError as exc:  # the SC refused the client: retrying won't help
                self.last_error = exc
                self._refused.set()  # ``start`` raises it
                async with self._changed:
                    self._changed.notify_all()
                if self.view.revision is None:
                    return
                log.warning("metadata watch refused, retrying: %s", exc)
                await pause.sleep()
            except FluvioError as exc:  # an update the view refused: start over from it
                log.warning("metadata update not applied, reconnecting: %r", exc)
                self.last_error = exc
                if self._conn is not None:
                    await self._conn.close()
                await pause.sleep()

    async def _notify(self) -> None:
        for listener in self._listeners:
            listener(self.view)
        async with self._changed:
            self._version += 1
            self._changed.notify_all()

    async def wait_for(
        self,
        predicate: Callable[[MetadataView], bool],
        timeout: float,  # noqa: ASYNC109 - typed error
    ) -> None:
        """Wait until ``predicate(view)`` holds, re-checking after every update.

        Raises:
            RequestTimeoutError: it did not hold within ``timeout`` seconds.
        """
        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: predicate(self.view))
        except TimeoutError:
            raise RequestTimeoutError(f"metadata condition not met within {timeout}s") from None

    async def wait_changed(self, timeout: float) -> bool:  # noqa: ASYNC109
        """Wait for the next applied update; False on timeout."""
        start = self._version
        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: self._version != start)
        except TimeoutError:
            return False
        return True

    async def leader(
        self,
        topic: str,
        index: int,
        timeout: float,  # noqa: ASYNC109
        *,
        not_spu: int | None = None,
        stale_epoch: int | None = None,
        failover: bool = False,
    ) -> Leader:
        """The partition's leader, waiting (bounded) until one is online.

        A partition that will not get a leader by itself (``no_leader_problem``: its
        topic is unprovisioned, or every replica's SPU is offline) fails at once, typed;
        one whose leader is changing (failover, a new partition) is waited for.

        Args:
            not_spu: an SPU that just refused or failed; prefer waiting for metadata
                to name another leader, but accept it again after a short wait. Implies
                ``failover``.
            stale_epoch: a leader epoch an SPU just fenced (``FencedLeaderEpochError``):
                prefer waiting for metadata with a newer one (the SC published it, the
                watch is about to bring it), but take what it says after a short wait.
            failover: the caller just lost the partition's leader (its request failed
                with a retriable error): replicas all offline are waited for too.

        Raises:
            UnknownTopicError: the topic does not exist.
            UnknownPartitionError: the topic has no such partition.
            InsufficientResourcesError: the topic waits for more SPUs.
            InvalidConfigError: the topic's assignment names unregistered SPUs.
            PartitionOfflineError: every replica is on an offline SPU (not in failover).
            RequestTimeoutError: no online leader within ``timeout``.
        """
        self.check_partition(topic, index)
        failover = failover or not_spu is not None
        deadline = time.monotonic() + timeout
        if not_spu is not None:
            # Give the SC a moment to publish the election; then take what it says.
            with contextlib.suppress(RequestTimeoutError):
                await self.wait_for(
                    lambda v: (ld := v.leader(topic, index)) is not None and ld.spu_id != not_spu,
                    min(timeout, 0.5),
                )
        if stale_epoch is not None:
            with contextlib.suppress(RequestTimeoutError):
                await self.wait_for(
                    lambda v: (
                        (ld := v.leader(topic, index)) is not None and ld.leader_epoch > stale_epoch
                    ),
                    min(timeout, 0.5),
                )

        def settled(view: MetadataView) -> bool:
            return (
                view.leader(topic, index) is not None
                or view.partition_count(topic) is None
                or view.no_leader_problem(topic, index, failover=failover) is not None
            )

        if not settled(self.view):
            remaining = max(0.0, deadline - time.monotonic())
            try:
                await self.wait_for(settled, remaining)
            except RequestTimeoutError:
                self.check_partition(topic, index)
                state = self.view.leader_state(topic, index)
                raise RequestTimeoutError(
                    f"partition {topic}-{index} has no online leader: {state}"
                ) from None
        self.check_partition(topic, index)
        found = self.view.leader(topic, index)
        if found is not None:
            return found
        problem = self.view.no_leader_problem(topic, index, failover=failover)
        assert problem is not None
        raise problem

    def check_partition(self, topic: str, index: int) -> None:
        """Raise the typed error when the topic or partition does not exist."""
        count = self.view.partition_count(topic)
        if count is None:
            raise UnknownTopicError(f"topic {topic!r} not found")
        if not 0 <= index < count:
            raise UnknownPartitionError(
                f"topic {topic!r} has partitions 0..{count - 1}, not {index}"
            )

    async def close(self) -> None:
        """Stop the watch task and close its connection. Idempotent."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._conn is not None:
            await self._conn.close()
