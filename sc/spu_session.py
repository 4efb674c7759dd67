"""One accepted SPU connection, as the SC sees it: its queued changes and its pushes.

A ``SpuSession`` queues what changed for its SPU (SPUs, replicas, purges, gates),
coalesced per SPU id and per partition, and turns the queues into the ``SPU_CONNECT``
stream's pushes: the full snapshot first (taken together with clearing the queues, so no
change falls between them), then incremental updates of at most ``MAX_PUSH_ENTRIES``
entries each, gates before the replicas of the same batch. The ``ConnectionManager``
(``sc.connection_manager``) owns the sessions and feeds them; this module holds no
policy of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable
from typing import TYPE_CHECKING, Any

from sc.gates import GateView
from spark_stream.models import Spu
from spark_stream.protocol import GateEntry, Message, UpdateGates
from spark_stream.protocol.control import (
    Replica,
    ReplicaId,
    SpuConnectAccepted,
    UpdateReplicas,
    UpdateSpus,
)

if TYPE_CHECKING:
    from sc.connection_manager import ConnectionManager

__all__ = ["SpuSession", "MAX_PUSH_ENTRIES"]

#: Most entries one incremental push carries; more wait for the next push.
MAX_PUSH_ENTRIES = 5000


class SpuSession:
    """One accepted SPU connection: its pending changes and its liveness.

    Args:
        cm: the owning connection manager.
        spu_id: the SPU this connection speaks for.
        closer: closes the underlying connection (``ConnContext.close``).
    """

    def __init__(
        self,
        cm: ConnectionManager,
        spu_id: int,
        closer: Callable[[], None],
        stored: Iterable[ReplicaId] = (),
    ) -> None:
        self.cm = cm
        self.spu_id = spu_id
        self._closer = closer
        self.last_seen = cm.clock()
        self.active = True
        self._stored = tuple(stored)
        self._spus: dict[int, Spu | None] = {}
        self._replicas: dict[str, Replica | None] = {}
        self._purge: dict[ReplicaId, None] = {}  # an ordered set
        self._gates: list[GateEntry] = []
        self._deleted_groups: dict[str, None] = {}  # an ordered set
        self.gates_sent: dict[str, GateView] = {}
        """Per group, the gates this session pushed (what the SPU holds, as far as the SC
        knows)."""
        self.applied_generations: dict[str, int] = {}
        """Per group, the plan generation the SPU reported applying (heartbeat)."""
        self.gate_rejections: dict[str, dict[str, int]] = {}
        """Per group, the group fetches the SPU's gates refused, per reason (heartbeat)."""
        self._wakeup = asyncio.Event()

    def touch(self) -> None:
        """Record a sign of life (any request from the SPU)."""
        self.last_seen = self.cm.clock()

    def close(self) -> None:
        """Close the connection; ``ConnectionManager.detach`` follows from the server."""
        self.active = False
        self._wakeup.set()
        self._closer()

    def queue_spu(self, spu_id: int, spu: Spu | None) -> None:
        """Queue an SPU change (None: deleted) for the next incremental push."""
        self._spus[spu_id] = spu
        self._wakeup.set()

    def queue_replica(self, name: str, replica: Replica | None) -> None:
        """Queue a replica change (None: no longer held here) for the next push."""
        self._replicas[name] = replica
        self._wakeup.set()

    def queue_purge(self, entry: ReplicaId) -> None:
        """Queue the deletion of a deleted partition's storage for the next push."""
        self._purge[entry] = None
        self._wakeup.set()

    def queue_gates(self, entries: list[GateEntry], deleted_groups: Iterable[str] = ()) -> None:
        """Queue gate changes (and deleted groups) for the next push."""
        self._gates.extend(entries)
        self._deleted_groups.update(dict.fromkeys(deleted_groups))
        if entries or self._deleted_groups:
            self._wakeup.set()

    @property
    def pending(self) -> int:
        """Changes queued and not yet pushed."""
        return (
            len(self._spus)
            + len(self._replicas)
            + len(self._purge)
            + len(self._gates)
            + len(self._deleted_groups)
        )

    async def pushes(self) -> AsyncGenerator[Message, None]:
        """The messages of the ``SPU_CONNECT`` stream, until the session ends.

        The snapshot for the full pushes is taken before the first yield, together with
        clearing the queues, so no change falls between the snapshot and the increments.
        The full ``UpdateReplicas`` purges the stored replicas whose partition is gone.
        """
        cm = self.cm
        spus = [cm.spus[i] for i in sorted(cm.spus)]
        replicas = cm.replicas_of(self.spu_id)
        purge = dict.fromkeys([*cm.stale(self._stored), *self._purge])
        self._spus.clear()
        self._replicas.clear()
        self._purge.clear()
        self._gates.clear()
        self._deleted_groups.clear()
        full = cm.desired_gates().get(self.spu_id, {})
        self.gates_sent = {}
        for key, entry in full.items():
            self.gates_sent.setdefault(key[0], {})[key] = entry
        gates = list(full.values())
        revision = cm.revision()
        yield SpuConnectAccepted(self.spu_id, cm.heartbeat_timeout_s, revision, cm.store_id)
        yield UpdateSpus.build(
            spus, full=True, revision=revision, peer_keys=cm.peer_keys(self.spu_id, spus)
        )
        yield UpdateGates.build(True, gates, groups=sorted(cm.groups))
        yield UpdateReplicas.build(replicas, full=True, purge=purge, revision=revision)
        while self.active:
            await self._wakeup.wait()
            self._wakeup.clear()
            if not self.active:
                return
            if self._spus:
                batch = _take(self._spus)
                changed = [s for s in batch.values() if s is not None]
                yield UpdateSpus.build(
                    changed,
                    full=False,
                    deleted=[i for i, s in batch.items() if s is None],
                    revision=cm.revision(),
                    peer_keys=cm.peer_keys(self.spu_id, changed),
                )
            while self._gates or self._deleted_groups:
                # Before the replicas, including gates queued while this push waited:
                # a new leader holds its gates when it starts.
                gates, self._gates = self._gates, []
                deleted = list(_take(self._deleted_groups))
                yield UpdateGates.build(False, gates, deleted_groups=deleted)
            if self._replicas or self._purge:
                taken = _take(self._replicas)
                yield UpdateReplicas.build(
                    [r for r in taken.values() if r is not None],
                    full=False,
                    deleted=[n for n, r in taken.items() if r is None],
                    purge=_take(self._purge),
                    revision=cm.revision(),
                )
            if self._spus or self._replicas or self._purge or self._deleted_groups:
                self._wakeup.set()  # more than one push's worth was queued


def _take(pending: dict[Any, Any]) -> dict[Any, Any]:
    """Remove and return up to ``MAX_PUSH_ENTRIES`` entries, oldest first."""
    if len(pending) <= MAX_PUSH_ENTRIES:
        taken = dict(pending)
        pending.clear()
        return taken
    keys = list(pending)[:MAX_PUSH_ENTRIES]
    return {key: pending.pop(key) for key in keys}
