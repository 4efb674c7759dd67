"""A simulated SPU for SC tests: speaks the real private protocol over ``Connection``.

It opens ``SPU_CONNECT``, applies the SC's pushes to a local view (SPUs, replicas),
sends heartbeats, and, as a leader would, reports live replica status for every
partition it leads (LEO/HW 0, all replicas in sync) as soon as it learns of it.
``silence()`` stops every request without closing the socket (a hung SPU).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from spark_stream.errors import FluvioError
from spark_stream.models import PartitionStatus, PrivateEndpoint, PublicEndpoint, ReplicaStatus, Spu
from spark_stream.net.connection import Connection
from spark_stream.net.stream import Stream
from spark_stream.protocol.control import (
    HeartbeatRequest,
    LrsStatus,
    Replica,
    ReplicaId,
    ReplicaMeta,
    SpuConnectAccepted,
    SpuConnectRequest,
    UpdateLrsRequest,
    UpdateLrsResponse,
    UpdateReplicas,
    UpdateSpus,
)

T = TypeVar("T")


def sim_secret(spu_id: int) -> str:
    """The secret simulated SPU ``spu_id`` presents (register it with this one)."""
    return f"sim-spu-{spu_id}-secret"


class SimSpu:
    """One simulated SPU connected to the SC's private port."""

    def __init__(
        self,
        port: int,
        spu_id: int,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        public_port: int | None = None,
        heartbeat_s: float = 0.2,
        auto_lrs: bool = True,
        stored: list[ReplicaId] | None = None,
        meta: list[ReplicaMeta] | None = None,
        group: str | None = None,
    ) -> None:
        self.host, self.port, self.spu_id = host, port, spu_id
        self.token = sim_secret(spu_id) if token is None else token
        self.public_port = public_port
        self.heartbeat_s = heartbeat_s
        self.auto_lrs = auto_lrs
        self.conn: Connection | None = None
        self.stream: Stream | None = None
        self.accepted: SpuConnectAccepted | None = None
        self.spus: dict[int, Spu] = {}
        self.replicas: dict[str, Replica] = {}
        self.pushes = 0
        self.full_pushes = 0
        self.error: BaseException | None = None
        self.stored = list(stored or [])
        """Replica directories it reports on connect (``SpuConnectRequest.stored``)."""
        self.meta = list(meta or [])
        """Replica metadata it reports on connect (``SpuConnectRequest.replica_meta``)."""
        self.group = group
        self.purged: list[ReplicaId] = []
        """Every ``purge`` entry the SC pushed."""
        self.silent = False
        self._tasks: list[asyncio.Task[None]] = []
        self._reported: dict[str, int | None] = {}
        self._changed = asyncio.Event()

    async def connect(self) -> SimSpu:
        """Connect and wait for ``SpuConnectAccepted`` (raises the SC's typed error)."""
        self.silent = False
        self.spus.clear()
        self.replicas.clear()
        self.conn = await Connection.open(self.host, self.port, timeout=5)
        public = PublicEndpoint(port=self.public_port) if self.public_port else None
        private = PrivateEndpoint(port=self.public_port + 1) if self.public_port else None
        request = SpuConnectRequest.build(
            self.spu_id, self.token, public, private, self.stored, self.meta, self.group
        )
        self.stream = await self.conn.stream(request, window=64)
        first = await asyncio.wait_for(self.stream.__anext__(), 10)
        msg = first.message()
        assert isinstance(msg, SpuConnectAccepted)
        self.accepted = msg
        self._reported.clear()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read()), loop.create_task(self._beat())]
        return self

    async def _read(self) -> None:
        assert self.stream is not None
        try:
            async for push in self.stream:
                msg = push.message()
                self.pushes += 1
                if isinstance(msg, UpdateSpus):
                    if msg.full:
                        self.spus.clear()
                        self.full_pushes += 1
                    for spu in msg.spu_objects():
                        self.spus[spu.spu_id] = spu
                    for gone in msg.deleted:
                        self.spus.pop(gone, None)
                elif isinstance(msg, UpdateReplicas):
                    if msg.full:
                        self.replicas.clear()
                        self.full_pushes += 1
                    for rep in msg.replica_entries():
                        held = self.replicas.get(rep.name)
                        if msg.full or held is None or rep.revision >= held.revision:
                            self.replicas[rep.name] = rep
                    for name in msg.deleted:
                        self.replicas.pop(name, None)
                    self.purged += msg.purge_entries()
                    if self.auto_lrs and not self.silent:
                        await self.report_leaders()
                self._changed.set()
        except (FluvioError, OSError) as exc:
            self.error = exc

    async def _beat(self) -> None:
        with contextlib.suppress(FluvioError, OSError):
            while True:
                await asyncio.sleep(self.heartbeat_s)  # the heartbeat period
                if not self.silent and self.conn is not None:
                    await self.conn.call(HeartbeatRequest(self.spu_id), timeout=5)

    async def report_leaders(self) -> UpdateLrsResponse | None:
        """Report LRS for every led partition whose leadership this SPU did not report."""
        entries = []
        for rep in self.replicas.values():
            if rep.leader == self.spu_id and self._reported.get(rep.name) != rep.revision:
                self._reported[rep.name] = rep.revision
                entries.append(self.lrs_entry(rep.name))
        if not entries:
            return None
        return await self.send_lrs(entries)

    def lrs_entry(self, name: str, leo: int = 0, hw: int = 0) -> LrsStatus:
        """An LRS entry naming this SPU as leader and every replica in sync at ``leo``."""
        rep = self.replicas[name]
        lrs = tuple(ReplicaStatus(spu_id=s, leo=leo, hw=hw) for s in rep.replicas)
        return LrsStatus(
            name,
            PartitionStatus(
                leader=self.spu_id,
                leader_epoch=rep.leader_epoch,
                lrs=lrs,
                leo=leo,
                hw=hw,
                log_start_offset=0,
            ),
        )

    async def send_lrs(self, entries: list[LrsStatus]) -> UpdateLrsResponse:
        """Send one ``UpdateLrsRequest``."""
        assert self.conn is not None
        reply = await self.conn.call(UpdateLrsRequest.build(self.spu_id, entries), timeout=10)
        assert isinstance(reply, UpdateLrsResponse)
        return reply

    def silence(self) -> None:
        """Stop sending anything (heartbeats, LRS) but keep the socket open."""
        self.silent = True

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until ``condition()`` holds after some push; fail after ``timeout``."""
        async with asyncio.timeout(timeout):
            while True:
                self._changed.clear()
                if condition():
                    return
                await self._changed.wait()

    async def close(self) -> None:
        """Close the connection and stop the tasks."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self.conn is not None:
            await self.conn.close()
            self.conn = None


def run(coro: Awaitable[T], timeout: float = 60) -> T:
    """Run ``coro`` in a fresh event loop, failing after ``timeout`` seconds."""

    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await coro

    return asyncio.run(bounded())
