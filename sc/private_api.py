"""The SC private server (port 9004): SPU connections, live replica status, heartbeats.

One handler per api (``SPU_CONNECT``, ``UPDATE_LRS``, ``HEARTBEAT``), all thin: they
check the peer and call the connection manager (``sc.connection_manager``), which holds
the logic. The conversation is specified in ``docs/protocol.md`` ("SC private
messages"):

- ``SPU_CONNECT`` (a stream): with a report of replicas the store forgot (its data was
  lost), rebuild them first (``sc.rebuild``; a known SPU's secret is checked before, an
  SPU the store forgot is registered again with the verifier of the secret it
  presented), then authorise the SPU (registered id and that SPU's own secret; a refused
  peer gets ``UnauthorizedError``, logged, and the connection closes), store the
  endpoints it actually bound in its SPU spec when they differ, attach a session (with
  the replica directories the SPU reported, so its full push can purge deleted ones) and
  stream its pushes. An SPU registered (or given its secret) a moment ago may not be
  mirrored yet, so a refused SPU is checked again once the mirror caught up with the KV.
- ``UPDATE_LRS`` / ``HEARTBEAT``: only on a connection that completed ``SPU_CONNECT``,
  for the same SPU id. An ``UPDATE_LRS`` entry that shrinks a partition's in-sync set
  is accepted only once the store records the shrink (``sc.isr``; refused after
  ``SHRINK_RECORD_TIMEOUT_S``). Every request refreshes the session's liveness; a
  watchdog task drops sessions silent for ``heartbeat_timeout_s`` (not counting the
  time the SC's own loop was stalled, ``sc.liveness``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from sc.connection_manager import ConnectionManager
from sc.dispatcher import Dispatcher
from sc.isr import unrecorded_removals
from sc.kv.store import KvStore
from sc.rebuild import Rebuilder
from sc.spu_session import SpuSession
from spark_stream.errors import ConflictError, InvalidRequestError, UnauthorizedError
from spark_stream.models import (
    Partition,
    PartitionStatus,
    PrivateEndpoint,
    PublicEndpoint,
    Spu,
)
from spark_stream.net.budget import RequestBudget
from spark_stream.net.server import ConnContext, Server
from spark_stream.protocol import ApiKey, Message, Request
from spark_stream.protocol.control import (
    HeartbeatRequest,
    HeartbeatResponse,
    LrsStatus,
    SpuConnectRequest,
    UpdateLrsRequest,
    UpdateLrsResponse,
)
from spark_stream.spu_identity import secret_verifier

__all__ = ["PrivateApi"]

log = logging.getLogger(__name__)

_SESSION = "spu_session"

#: The wait for an in-sync shrink to reach the store before it is refused (the SPU's
#: request timeout is 10 s; a refused shrink is reported again a heartbeat period later).
SHRINK_RECORD_TIMEOUT_S = 5.0


def _status(partition: Partition | None) -> PartitionStatus | None:
    return None if partition is None else partition.status


class PrivateApi:
    """The private server and its handlers.

    Args:
        cm: the connection manager.
        dispatcher: the controller loop (to catch up before refusing an unknown id).
        kv: the KV store (to record the endpoints an SPU bound).
        host: address to bind.
        port: port to bind (0: any free one; read ``port`` after ``start``).
        budget: the process's request-bytes budget (shared with the public server).
        rebuilder: rebuilds what a connecting SPU reports and the store forgot
            (``sc.rebuild``); None: reports are not used.
    """

    def __init__(
        self,
        cm: ConnectionManager,
        dispatcher: Dispatcher,
        kv: KvStore,
        *,
        host: str = "127.0.0.1",
        port: int = 9004,
        budget: RequestBudget | None = None,
        tls: ssl.SSLContext | None = None,
        rebuilder: Rebuilder | None = None,
    ) -> None:
        self.cm = cm
        self.rebuilder = rebuilder
        self.dispatcher = dispatcher
        self.kv = kv
        self.server = Server(
            {
                ApiKey.SPU_CONNECT: self._spu_connect,
                ApiKey.UPDATE_LRS: self._update_lrs,
                ApiKey.HEARTBEAT: self._heartbeat,
            },
            host=host,
            port=port,
            name="sc-private",
            tls=tls,
            on_disconnect=self._on_disconnect,
            budget=budget,
        )
        self._watchdog: asyncio.Task[None] | None = None
        #: How long an ``UPDATE_LRS`` answer waits for the store to record a shrink.
        self.shrink_record_timeout_s = SHRINK_RECORD_TIMEOUT_S

    @property
    def port(self) -> int:
        """The bound port (after ``start``)."""
        return self.server.port

    async def start(self) -> None:
        """Listen, and start the heartbeat watchdog."""
        await self.server.start()
        self._watchdog = asyncio.get_running_loop().create_task(
            self._watch_heartbeats(), name="sc-heartbeat-watchdog"
        )

    async def stop(self) -> None:
        """Stop the watchdog and the server (closing every SPU connection)."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
            self._watchdog = None
        await self.server.stop()

    async def _watch_heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.cm.sweep_interval_s)  # periodic sweep of silent sessions
            self.cm.close_expired()

    # -- handlers ----------------------------------------------------------------------

    async def _spu_connect(self, request: Request, ctx: ConnContext) -> AsyncIterator[Message]:
        msg = request.message()
        assert isinstance(msg, SpuConnectRequest)
        if not request.stream:
            raise InvalidRequestError("SPU_CONNECT answers with a stream; open it with stream()")
        if _SESSION in ctx.state:
            raise InvalidRequestError("this connection already carries an SPU session")
        public, private = msg.endpoints()
        stored = msg.stored_replicas()
        records = msg.replica_records()
        try:
            if records and self.rebuilder is not None:
                # Only a peer with the secret may have the store rebuilt from its report.
                self.cm.may_rebuild(msg.spu_id, msg.token)
                await self.rebuilder.absorb(
                    msg.spu_id,
                    records,
                    public,
                    private,
                    msg.group,
                    verifier=secret_verifier(msg.token),
                )
            spu = await self._authorize(msg)
        except UnauthorizedError as exc:
            log.warning("spu refused spu=%d peer=%s reason=%s", msg.spu_id, ctx.peer, exc)
            ctx.close()
            raise
        await self._record_endpoints(spu, public, private)
        session = self.cm.attach(msg.spu_id, ctx.close, stored)
        ctx.state[_SESSION] = session
        log.info("spu connected spu=%d peer=%s", msg.spu_id, ctx.peer)
        return self._pushes(session)

    async def _pushes(self, session: SpuSession) -> AsyncGenerator[Message, None]:
        try:
            async for push in session.pushes():
                yield push
        finally:
            self.cm.detach(session, "stream ended")

    async def _authorize(self, msg: SpuConnectRequest) -> Spu:
        try:
            return self.cm.authorize(msg.spu_id, msg.token)
        except UnauthorizedError:
            pass  # the KV may hold a registration or a verifier the mirror has not yet
        await self.dispatcher.catch_up(timeout=2.0)
        return self.cm.authorize(msg.spu_id, msg.token)

    async def _record_endpoints(
        self, spu: Spu, public: PublicEndpoint | None, private: PrivateEndpoint | None
    ) -> None:
        """Write the endpoints the SPU bound into its spec, so clients can find it."""
        update: dict[str, Any] = {}
        if public is not None and public != spu.spec.public_endpoint:
            update["public_endpoint"] = public
        if private is not None and private != spu.spec.private_endpoint:
            update["private_endpoint"] = private
        if not update:
            return
        current: Any = spu
        for _ in range(3):
            try:
                stored = await self.kv.update_spec(
                    Spu.kind,
                    current.name,
                    current.spec.model_copy(update=update),
                    current.revision,
                )
            except ConflictError:
                current = await self.kv.get(Spu.kind, spu.name)
                if current is None:
                    raise UnauthorizedError(f"SPU {spu.spu_id} was unregistered") from None
                continue
            log.info(
                "spu endpoints recorded spu=%d %s",
                spu.spu_id,
                " ".join(f"{k}={v.port}" for k, v in update.items()),
            )
            # The pushes that follow must carry the new endpoints.
            await self.dispatcher.wait_revision(stored.revision, 5.0, processed=True)
            return
        log.warning("spu endpoints not recorded (busy object) spu=%d", spu.spu_id)

    def _session(self, ctx: ConnContext, spu_id: int) -> SpuSession:
        session = ctx.state.get(_SESSION)
        if not isinstance(session, SpuSession) or not session.active:
            raise UnauthorizedError("open SPU_CONNECT on this connection first")
        if session.spu_id != spu_id:
            raise UnauthorizedError(
                f"this connection speaks for SPU {session.spu_id}, not SPU {spu_id}"
            )
        session.touch()
        return session

    async def _update_lrs(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, UpdateLrsRequest)
        self._session(ctx, msg.spu_id)
        statuses = msg.statuses()
        accepted, rejected = self.cm.receive_lrs(msg.spu_id, statuses)
        if rejected:
            log.info("lrs entries rejected spu=%d partitions=%s", msg.spu_id, rejected[:10])
        unrecorded = await self._record_shrinks(statuses, set(rejected))
        if unrecorded:
            log.warning(
                "in-sync shrink not recorded in time, refused spu=%d partitions=%s",
                msg.spu_id,
                unrecorded[:10],
            )
            self.cm.forget_reports(unrecorded)
            accepted -= len(unrecorded)
            rejected += unrecorded
        return UpdateLrsResponse(accepted, rejected)

    async def _record_shrinks(self, statuses: list[LrsStatus], rejected: set[str]) -> list[str]:
        """Wait until the store records every in-sync shrink among the accepted entries.

        Accepting a shrink lets its leader commit what the dropped followers lack, so the
        answer waits for the store, which elections read (``sc.isr``). Returns the entries
        whose shrink was not recorded within ``shrink_record_timeout_s``: refused, so
        their leaders keep the larger set and report again.
        """
        store = self.dispatcher.store

        def pending(entries: dict[str, PartitionStatus]) -> list[str]:
            return sorted(
                name
                for name, reported in entries.items()
                if unrecorded_removals(_status(store.partition(name)), reported)
            )

        accepted = {s.name: s.status for s in statuses if s.name not in rejected}
        shrinks = {name: accepted[name] for name in pending(accepted)}
        if shrinks:
            await self.dispatcher.wait_until(
                lambda: not pending(shrinks), timeout=self.shrink_record_timeout_s
            )
        return pending(shrinks)

    async def _heartbeat(self, request: Request, ctx: ConnContext) -> Message:
        msg = request.message()
        assert isinstance(msg, HeartbeatRequest)
        session = self._session(ctx, msg.spu_id)
        self.cm.gates_applied(session, msg.applied_generations, msg.gate_rejections)
        return HeartbeatResponse(self.dispatcher.store.revision)

    def _on_disconnect(self, ctx: ConnContext, cause: BaseException | None) -> None:
        session = ctx.state.get(_SESSION)
        if isinstance(session, SpuSession):
            self.cm.detach(session, cause or "connection closed")
