"""The follower controller: one per leader SPU, replicating all its replicas on one connection.

Theory of operation. The controller keeps one connection to the leader SPU's private
port and one ``FOLLOWER_STREAM`` on it for every replica this SPU follows there (see
``spu.private_messages``). A loop (re)connects with backoff and, per connection, opens
the stream with each replica's offsets and tail signature, then applies pushes:

- ``truncate_to`` (the first push of a replica): cut the log to the agreed point, or
  reset it when the leader no longer holds those offsets; only then is the replica
  *synced* and reported;
- frames: appended as they are (``append_replicated`` keeps the leader's offsets and
  refuses gaps); the leader's high watermark is adopted, capped at the local LEO;
- ``error``: the leader stopped serving the replica; the stream is reopened after a short
  pause so every replica syncs again.

A replica whose log holds a recorded damage (bit rot found by the scrub, see
``spu.scrubber``) is cut at the damaged frame when a stream opens (``repair``
reopens it at once), and its offsets say ``repair_from``: the leader then sends the
cut range again like any missing tail, and shows the repair in its status.

Each connection is authenticated before any stream (``spu.peer_keys``: this SPU and the
leader prove they hold the key the SC gave both); a refusal backs off and retries like
any failed connection (the SC may not have pushed the key yet).

A reporter task on the same connection sends ``FollowerLeoRequest`` with the LEO of
every synced replica after appends (coalesced) and every ``report_interval_s`` when idle,
so the leader sees a caught-up follower as in sync. Changing the replica set or the
leader's endpoint reopens the stream (and the connection, for a new endpoint). The
storage logs belong to the dispatcher; ``set_replicas`` returns only once the old stream
can no longer append to a replica that was taken away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from dataclasses import dataclass

from spark_stream.backoff import BackoffPolicy, sleep_or_wake
from spark_stream.errors import FluvioError, LogGapError, StorageError
from spark_stream.net.connection import Connection
from spark_stream.protocol import DEFAULT_FETCH_MAX_BYTES, received_tail, tail_length
from spu._tasks import cancel_and_wait
from spu.frames import tail_signature
from spu.peer_keys import PeerKeyring, follower_handshake
from spu.private_messages import (
    MAX_TAIL_SIGNATURE,
    FollowerLeoRequest,
    FollowerPush,
    FollowerStreamRequest,
    ReplicaOffsets,
)
from spu.storage import ReplicaLog

__all__ = ["FollowerController", "idle_report_interval_s"]

logger = logging.getLogger(__name__)


def idle_report_interval_s(max_lag_ms: int) -> float:
    """A follower's idle LEO report period: well under the leader's max lag, 50 ms-1 s."""
    return min(max(max_lag_ms / 4000, 0.05), 1.0)


# Every wait below is cut short when the replicas or the leader's endpoint change.
#: Between reconnects, reset once a connection served.
_BACKOFF = BackoffPolicy(0.1, 2.0)
#: A fixed pause after an unexpected error, in seconds.
_CRASH_PAUSE_S = _BACKOFF.maximum
#: A fixed pause before reopening a stream that asked for a resync, in seconds.
_RESYNC_PAUSE_S = 0.1
_REQUEST_TIMEOUT = 10.0


class _Resync(Exception):
    """The stream must be reopened (a replica errored or a cut missed its point)."""


@dataclass(slots=True)
class _State:
    log: ReplicaLog
    synced: bool = False


class FollowerController:
    """Follows every replica that one leader SPU leads for this SPU.

    Args:
        spu_id: this SPU.
        leader_id: the leader SPU.
        keys: the peer keys (the one shared with the leader authenticates connections).
        report_interval_s: idle LEO report period (well under the leader's max lag).
        max_bytes: per-push frame budget asked of the leader.
        tls: connect to the leader's private port over TLS with this context.
    """

    def __init__(
        self,
        spu_id: int,
        leader_id: int,
        keys: PeerKeyring,
        *,
        report_interval_s: float,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.spu_id = spu_id
        self.tls = tls
        self.leader_id = leader_id
        self._keys = keys
        self.report_interval_s = report_interval_s
        self.max_bytes = max_bytes
        self._endpoint: tuple[str, int] | None = None
        self._logs: dict[str, ReplicaLog] = {}
        self._states: dict[str, _State] = {}
        self._repairs: dict[str, int] = {}  # where each repaired replica was cut
        self._changed = asyncio.Event()
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stream_task: asyncio.Task[None] | None = None
        self.sessions = 0  # streams opened, for tests and logs

    @property
    def replicas(self) -> list[str]:
        """Names of the replicas followed."""
        return sorted(self._logs)

    def synced(self, name: str) -> bool:
        """Whether the replica has synced with the leader on the current stream."""
        state = self._states.get(name)
        return state is not None and state.synced

    def start(self) -> None:
        """Start the connect-and-follow loop."""
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"follower-of-{self.leader_id}"
        )

    async def stop(self) -> None:
        """Stop following; no append happens after this returns."""
        await cancel_and_wait(self._task)
        self._task = None

    def repair(self, name: str) -> None:
        """Replica ``name``'s log has a recorded damage: reopen the stream, which cuts
        the log there and fetches the rest again from the leader."""
        if name in self._logs:
            self._changed.set()

    def set_endpoint(self, host: str, port: int) -> None:
        """Where the leader's private server is; a change reconnects."""
        if self._endpoint != (host, port):
            self._endpoint = (host, port)
            self._changed.set()

    async def set_replicas(self, logs: dict[str, ReplicaLog]) -> None:
        """Follow exactly these replicas; returns once removed ones are no longer written."""
        if logs.keys() == self._logs.keys() and all(logs[k] is self._logs[k] for k in logs):
            return
        stale = {k for k, log in self._logs.items() if logs.get(k) is not log}
        self._logs = dict(logs)
        self._changed.set()
        if stale and self._stream_task is not None and not self._stream_task.done():
            await cancel_and_wait(self._stream_task)

    # -- loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = _BACKOFF.start()
        while True:
            self._changed.clear()
            if self._endpoint is None or not self._logs:
                await self._changed.wait()
                continue
            host, port = self._endpoint
            try:
                conn = await Connection.open(
                    host,
                    port,
                    timeout=_REQUEST_TIMEOUT,
                    name=f"leader-{self.leader_id}",
                    tls=self.tls,
                )
            except FluvioError as exc:
                logger.info(
                    "cannot reach leader spu=%d at %s:%d: %s", self.leader_id, host, port, exc
                )
                await backoff.sleep(wake=self._changed)
                continue
            try:
                await follower_handshake(
                    conn, self._keys, self.spu_id, self.leader_id, _REQUEST_TIMEOUT
                )
                await self._serve(conn, (host, port))
                backoff.reset()
            except FluvioError as exc:
                logger.info("replication from spu=%d interrupted: %s", self.leader_id, exc)
                await backoff.sleep(wake=self._changed)
            except Exception:
                logger.exception("replication from spu=%d failed", self.leader_id)
                await sleep_or_wake(_CRASH_PAUSE_S, self._changed)
            finally:
                await conn.close()

    async def _serve(self, conn: Connection, endpoint: tuple[str, int]) -> None:
        """Run streams on one connection until it fails or the endpoint changes."""
        while not conn.closed and self._endpoint == endpoint and self._logs:
            self._changed.clear()
            stream = self._stream_task = asyncio.create_task(self._follow(conn))
            changed = asyncio.create_task(self._changed.wait())
            try:
                await asyncio.wait({stream, changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
                await cancel_and_wait(stream)  # also retrieves its exception
            if stream.cancelled():
                continue  # the replicas or the endpoint changed
            exc = stream.exception()
            if isinstance(exc, _Resync):
                logger.info("resync with spu=%d: %s", self.leader_id, exc)
                await sleep_or_wake(_RESYNC_PAUSE_S, self._changed)
            elif exc is not None:
                raise exc

    async def _follow(self, conn: Connection) -> None:
        """One stream: sync every replica, then append pushes and report LEOs."""
        self._states = {name: _State(log) for name, log in self._logs.items()}
        offsets = {}
        for name, state in self._states.items():
            cut = state.log.cut_damage()
            if cut is not None:
                logger.warning(
                    "repairing partition=%s from leader=%d: cut the damaged log at %d",
                    name,
                    self.leader_id,
                    cut,
                )
                self._repairs[name] = cut
            start, tail = tail_signature(state.log, state.log.hw, MAX_TAIL_SIGNATURE)
            offsets[name] = ReplicaOffsets(
                state.log.leo, start, tuple(tail), self._repairs.get(name)
            )
        request = FollowerStreamRequest.build(self.spu_id, offsets, self.max_bytes)
        self.sessions += 1
        reporter = asyncio.create_task(self._report_loop(conn))
        consumer = asyncio.create_task(self._consume(conn, request))
        try:
            await asyncio.wait({reporter, consumer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reporter, consumer):
                task.cancel()
            results = await asyncio.gather(reporter, consumer, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                raise result

    async def _consume(self, conn: Connection, request: FollowerStreamRequest) -> None:
        async with await conn.stream(request) as stream:
            async for item in stream:
                push = item.message()
                assert isinstance(push, FollowerPush)
                self._apply(push)

    def _apply(self, push: FollowerPush) -> None:
        state = self._states.get(push.name)
        if state is None:
            return
        log = state.log
        if push.error is not None:
            state.synced = False
            raise _Resync(f"leader dropped {push.name}: {push.message}")
        if push.truncate_to is not None:
            target = push.truncate_to
            if push.reset or target < log.log_start_offset or target > log.leo:
                log.reset(target)
            elif target < log.leo:
                log.truncate_to(target)
            if log.leo != target:
                raise _Resync(f"{push.name}: cut at {log.leo}, the leader asked for {target}")
            logger.info(
                "replica synced partition=%s leader=%d leo=%d reset=%s",
                push.name,
                self.leader_id,
                target,
                push.reset,
            )
            state.synced = True
            self._dirty.set()  # report the synced LEO at once
        if not state.synced:
            return
        if tail_length(push.tail):
            try:
                log.append_replicated(received_tail(push.tail))
            except LogGapError as exc:
                state.synced = False
                raise _Resync(f"{push.name}: {exc}") from exc
            except StorageError as exc:  # e.g. the disk is full: the operator must know
                logger.error(
                    "replicated append failed partition=%s dir=%s: %s",
                    push.name,
                    log.directory,
                    exc,
                )
                raise
            self._dirty.set()  # a new LEO: report it (an HW-only push needs no report)
        hw = max(log.log_start_offset, min(push.hw, log.leo))
        if hw != log.hw:
            log.hw = hw

    async def _report_loop(self, conn: Connection) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.report_interval_s):
                    await self._dirty.wait()
            self._dirty.clear()
            leos = {name: s.log.leo for name, s in self._states.items() if s.synced}
            if leos:
                await conn.call(FollowerLeoRequest(self.spu_id, leos), timeout=_REQUEST_TIMEOUT)
