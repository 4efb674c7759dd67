"""The SPU's link to the SC's private port: specs in, live replica status and heartbeats out.

Theory of operation (seed ``002``, "Update LRS"; ``spark_stream.protocol.control``). A
loop connects to ``sc_endpoint`` and opens an ``SPU_CONNECT`` stream with this SPU's id,
its own secret, the endpoints it actually bound (so port 0 works) and the replica
directories it has on disk (the SC purges those whose partition was deleted meanwhile)
with the metadata it keeps of each (``replica.json``: an SC whose store forgot them
rebuilds them, ``sc.rebuild``). The first push
must be ``SpuConnectAccepted``; then ``UpdateSpus``, ``UpdateGates`` and ``UpdateReplicas``
pushes go to the dispatcher in order (gates before the replicas that follow them, so a
new leader has its delivery gates when it starts serving). On the same connection two tasks send:

- ``UpdateLrsRequest`` for partitions whose leader reported a change (``lrs_changed``),
  coalesced: at most one request in flight, then a short pause, each carrying every
  partition that changed meanwhile with its status at send time (an entry equal to the
  one sent before reuses its encoded form: the periodic repeats cost no re-encoding).
  It is also the
  leader's AlterPartition: an entry the SC accepted (not in ``rejected``) goes back to
  its leader (``LeaderController.isr_accepted``), which only then applies a shrink of
  its in-sync set the entry proposed;
- every heartbeat period (``heartbeat_interval_s``, at most a third of the SC's timeout),
  the status of every partition led here plus a ``HeartbeatRequest`` (with the plan
  generation applied per consumer group); and a ``HeartbeatRequest`` at once after each
  applied ``UpdateGates``: the SC's group coordinator waits for that report before it
  pushes a member its new grants.

Whatever ends the connection (SC gone, secret refused, a failed request), the loop waits
with exponential backoff and connects again; the SC then pushes full specs, so nothing
depends on the old connection. ``sc_endpoint`` may list several SCs (an active one and
standbys, ``spark_stream.net.sc_endpoints``): a connection that fails moves to the next
address, and a standby's ``NotActiveError`` names the active SC, which is tried at once.
The dispatcher keeps serving with the specs it holds while the SC is away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from spark_stream.backoff import BackoffPolicy
from spark_stream.errors import (
    FluvioError,
    InvalidRequestError,
    NotActiveError,
    UnauthorizedError,
)
from spark_stream.models import IngressAddr, PrivateEndpoint, PublicEndpoint
from spark_stream.net.connection import Connection
from spark_stream.net.sc_endpoints import ScEndpoints
from spark_stream.net.stream import Stream
from spark_stream.net.tls import client_context
from spark_stream.protocol import UpdateGates
from spark_stream.protocol.control import (
    HeartbeatRequest,
    LrsStatus,
    SpuConnectAccepted,
    SpuConnectRequest,
    UpdateLrsRequest,
    UpdateLrsResponse,
    UpdateReplicas,
    UpdateSpus,
)
from spu._tasks import cancel_and_wait
from spu.dispatcher import SpuDispatcher
from spu.settings import SpuSettings

__all__ = ["ScLink"]

logger = logging.getLogger(__name__)

#: Reconnect delays (a standby naming the active SC cuts the wait short).
_BACKOFF = BackoffPolicy(0.1, 2.0)
_LRS_PAUSE = 0.05
_REQUEST_TIMEOUT = 10.0


class ScLink:
    """Keeps this SPU connected to the SC.

    Args:
        settings: id, ``sc_endpoint``, heartbeat period, bind host.
        dispatcher: the SPU dispatcher that takes the SC's pushes.
        public_port: the bound public port (reported to the SC).
        private_port: the bound private port (reported to the SC).
        secret: this SPU's own secret (``SpuSettings.load_secret``).

    Raises:
        InvalidConfigError: ``sc_endpoint`` is not a comma-separated list of
            ``host:port`` (``[v6]:port``).
    """

    def __init__(
        self,
        settings: SpuSettings,
        dispatcher: SpuDispatcher,
        public_port: int,
        private_port: int,
        secret: str,
    ) -> None:
        self.settings = settings
        self._secret = secret
        self.dispatcher = dispatcher
        self.endpoints = ScEndpoints.parse(settings.sc_endpoint, private=True, what="sc_endpoint")
        self.public = PublicEndpoint(
            port=public_port, ingress=(IngressAddr(hostname=settings.host),)
        )
        self.private = PrivateEndpoint(port=private_port, host=settings.host)
        self.accepted = asyncio.Event()
        self.connections = 0
        self._dirty: set[str] = set()
        self._dirty_event = asyncio.Event()
        self._gates_applied = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the connect loop."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="sc-link")

    async def stop(self) -> None:
        """Stop the loop and close the connection."""
        await cancel_and_wait(self._task)
        self._task = None

    def lrs_changed(self, name: str) -> None:
        """A leader's live status changed: report it soon."""
        self._dirty.add(name)
        self._dirty_event.set()

    # -- loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = _BACKOFF.start()
        while True:
            host, port = self.endpoints.current
            try:
                conn = await Connection.open(
                    host,
                    port,
                    timeout=_REQUEST_TIMEOUT,
                    name="sc",
                    tls=client_context(self.settings.tls),
                )
            except FluvioError as exc:
                logger.info("cannot reach the SC at %s:%d: %s", host, port, exc)
                self.endpoints.advance()
            else:
                sessions = self.connections
                try:
                    await self._session(conn)
                except NotActiveError as exc:
                    if self.endpoints.follow(exc):
                        logger.info("the SC at %s:%d is a standby: %s", host, port, exc)
                        backoff.reset()  # the next address is the active SC
                    else:
                        self.endpoints.advance()
                except UnauthorizedError as exc:
                    logger.error("the SC refused SPU %d: %s", self.settings.id, exc)
                except FluvioError as exc:
                    logger.warning("SC connection lost: %s", exc)
                    self.endpoints.advance()
                except Exception:
                    logger.exception("SC link failed")
                finally:
                    self.accepted.clear()
                    await conn.close()
                if self.connections > sessions:  # it was accepted: start backing off anew
                    backoff.reset()
            await backoff.sleep()

    async def _session(self, conn: Connection) -> None:
        # The replica directories on disk, so the SC can purge those deleted meanwhile.
        stored = await asyncio.to_thread(self.dispatcher.stored_replicas)
        # What it keeps of each replica, so an SC whose store forgot them rebuilds them.
        meta = await asyncio.to_thread(self.dispatcher.stored_meta)
        request = SpuConnectRequest.build(
            self.settings.id,
            self._secret,
            self.public,
            self.private,
            stored,
            meta,
            self.settings.group,
        )
        async with await conn.stream(request) as stream:
            first = await anext(stream)
            accepted = first.message()
            if not isinstance(accepted, SpuConnectAccepted):
                raise InvalidRequestError(f"the SC's first push is {type(accepted).__name__}")
            self.connections += 1
            self.dispatcher.store_id = accepted.store_id
            interval = min(self.settings.heartbeat_interval_s, accepted.heartbeat_timeout_s / 3)
            logger.info("connected to the SC spu=%d heartbeat_s=%.2f", self.settings.id, interval)
            self.accepted.set()
            tasks = [
                asyncio.create_task(self._consume(stream)),
                asyncio.create_task(self._heartbeats(conn, interval)),
                asyncio.create_task(self._send_lrs(conn)),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            for task in done:
                if not task.cancelled() and (error := task.exception()) is not None:
                    raise error

    async def _consume(self, stream: Stream) -> None:
        async for push in stream:
            msg = push.message()
            if isinstance(msg, UpdateSpus):
                await self.dispatcher.apply_spus(msg)
            elif isinstance(msg, UpdateReplicas):
                await self.dispatcher.apply_replicas(msg)
            elif isinstance(msg, UpdateGates):
                # Pushed before the UpdateReplicas that makes this SPU leader: the gates
                # are in place when it starts serving.
                self.dispatcher.apply_gates(msg)
                self._gates_applied.set()  # acknowledge at once (a heartbeat)
            else:
                logger.debug("ignoring SC push %s", type(msg).__name__)
        raise FluvioError("the SC ended the SPU_CONNECT stream")

    async def _heartbeats(self, conn: Connection, interval: float) -> None:
        loop = asyncio.get_running_loop()
        period_end = loop.time()
        while True:
            if loop.time() >= period_end:  # the period: every led partition's status too
                period_end = loop.time() + interval
                for leader in self.dispatcher.leaders():
                    self.lrs_changed(leader.name)
            # Cleared before reading the table: gates applied during the call send again.
            self._gates_applied.clear()
            gates = self.dispatcher.gates
            beat = HeartbeatRequest(
                self.settings.id,
                gates.applied_generations(),
                {group: dict(counts) for group, counts in gates.group_rejections.items()},
            )
            await conn.call(beat, timeout=_REQUEST_TIMEOUT)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, period_end - loop.time())):
                    await self._gates_applied.wait()

    async def _send_lrs(self, conn: Connection) -> None:
        wires: dict[str, tuple[LrsStatus, dict[str, Any]]] = {}  # name -> last entry sent
        while True:
            await self._dirty_event.wait()
            self._dirty_event.clear()
            names, self._dirty = self._dirty, set()
            sent = [
                (leader, leader.status())
                for name in sorted(names)
                if (leader := self.dispatcher.leader(name)) is not None and not leader.stopped
            ]
            if sent:
                reply = await conn.call(
                    UpdateLrsRequest(self.settings.id, [_wire(wires, s) for _, s in sent]),
                    timeout=_REQUEST_TIMEOUT,
                )
                if not isinstance(reply, UpdateLrsResponse):
                    raise InvalidRequestError(f"the SC answered {type(reply).__name__}")
                refused = set(reply.rejected)
                for leader, status in sent:  # accepted: a proposed shrink takes effect
                    if status.name not in refused:
                        leader.isr_accepted(status)
            await asyncio.sleep(_LRS_PAUSE)


def _wire(wires: dict[str, tuple[LrsStatus, dict[str, Any]]], status: LrsStatus) -> dict[str, Any]:
    """``status.to_wire()``, reused from ``wires`` when the status equals the one before."""
    held = wires.get(status.name)
    if held is None or held[0] != status:
        held = wires[status.name] = (status, status.to_wire())
    return held[1]
