"""Writing a rebuild plan when an SPU connects: the I/O half of ``sc.rebuild``.

The private server calls ``Rebuilder.absorb`` with an SPU's report before it authorises
the SPU, so the SPU's registration (when the store forgot it) and the partitions it holds
are in the mirror and in the connection manager's cache before its first full push:
that push then carries the replicas instead of purging their storage as deleted.

Partitions deleted from the store leave their uid as a tombstone (``KvStore``), read
when a report holds forgotten records (``plan_rebuild``'s ``tombstones``).

One report at a time (a lock): the plan is made on a mirror that caught up with the KV,
so two SPUs reporting the same topic do not both create it; an object another writer
created meanwhile (``ObjectExistsError``) is the store's and is left as it is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from sc.dispatcher import Dispatcher
from sc.kv.store import ChangeType, KvStore
from sc.local_store import Change
from sc.rebuild.plan import EpochRaise, RebuildPlan, TopicGrowth, forgotten, plan_rebuild
from spark_stream.errors import ConflictError, FluvioError, NotFoundError, ObjectExistsError
from spark_stream.models import KvObject, Partition, PrivateEndpoint, PublicEndpoint, Topic
from spark_stream.protocol.control import ReplicaMeta

__all__ = ["Rebuilder"]

log = logging.getLogger(__name__)

#: How long a connect waits for its rebuild to go through the controllers.
_SETTLE_S = 10.0


class Rebuilder:
    """Rebuilds what an SPU reports and the store forgot.

    Args:
        kv: the KV store.
        dispatcher: the controller loop (its mirror is planned on; its progress awaited).
        store_id: returns the store's identity (read at the SC's start).
    """

    def __init__(self, kv: KvStore, dispatcher: Dispatcher, store_id: Callable[[], str]) -> None:
        self.kv = kv
        self.dispatcher = dispatcher
        self.store_id = store_id
        self._lock = asyncio.Lock()
        self._burying: set[asyncio.Task[None]] = set()
        self.rebuilt: list[str] = []
        """Names of the partitions rebuilt so far (for logs and tests)."""
        dispatcher.add_listener(self._changed)

    def _changed(self, changes: list[Change], resync: bool) -> None:
        """Deleted partitions' uids become tombstones (``KvStore.add_tombstones``).

        Not on a resync: its deletions may be a store that forgot, not an admin.
        """
        if resync:
            return
        uids = [
            change.old.uid
            for change in changes
            if change.kind == Partition.kind
            and change.type is ChangeType.DELETED
            and change.old is not None
            and change.old.uid
        ]
        if uids:
            task = asyncio.get_running_loop().create_task(self._bury(uids))
            self._burying.add(task)
            task.add_done_callback(self._burying.discard)

    async def _bury(self, uids: list[str]) -> None:
        try:
            await self.kv.add_tombstones(uids)
        except FluvioError as exc:  # a missed tombstone only narrows the gap it closes
            log.warning("tombstones of deleted partitions not written: %s", exc)

    async def absorb(
        self,
        spu_id: int,
        records: Sequence[ReplicaMeta],
        public: PublicEndpoint | None,
        private: PrivateEndpoint | None,
        group: str | None = None,
    ) -> RebuildPlan:
        """Plan on SPU ``spu_id``'s report and write the plan; return it.

        Raises:
            KvUnavailableError: Redis did not answer (the SPU's connect fails and it
                connects again later).
        """
        if not records:
            return RebuildPlan()
        async with self._lock:
            await self.dispatcher.catch_up(timeout=_SETTLE_S)
            store, store_id = self.dispatcher.store, self.store_id()
            if not any(forgotten(meta, store_id, store.revision) for meta in records):
                return RebuildPlan()  # the usual connect: no tombstones to read
            plan = plan_rebuild(
                store,
                store_id,
                records,
                spu_id=spu_id,
                public=public,
                private=private,
                group=group,
                tombstones=await self.kv.tombstones(),
            )
            if plan.empty:
                return plan
            log.warning(
                "the store forgot what SPU %d holds: rebuilding spu=%s topics=%s "
                "partitions=%s growths=%s epochs=%s",
                spu_id,
                "yes" if plan.spu is not None else "no",
                [t.name for t in plan.topics],
                [p.name for p in plan.partitions],
                [g.topic for g in plan.growths],
                [r.partition for r in plan.raises],
            )
            await self._write(plan)
            self.rebuilt += [p.name for p in plan.partitions]
            await self.dispatcher.catch_up(timeout=_SETTLE_S)
            return plan

    async def _write(self, plan: RebuildPlan) -> None:
        if plan.spu is not None:
            await self._create(plan.spu)
        for topic in plan.topics:
            await self._create(topic)
        await asyncio.gather(*(self._create(p, keep_uid=True) for p in plan.partitions))
        for growth in plan.growths:
            await self._grow(growth)
        for raised in plan.raises:
            await self._raise_epoch(raised)

    async def _create(self, obj: KvObject[Any, Any], *, keep_uid: bool = False) -> None:
        try:
            await self.kv.create(obj, keep_uid=keep_uid)
        except ObjectExistsError:
            log.info("rebuild: %s %s exists already, kept", obj.kind, obj.name)

    async def _grow(self, growth: TopicGrowth) -> None:
        """Map rows first, then ``partitions``: the topic controller never assigns them."""
        for _ in range(3):
            topic = await self.kv.get(Topic.kind, growth.topic)
            if not isinstance(topic, Topic):
                return
            rows = {**topic.status.replica_map, **growth.rows}
            try:
                status = topic.status.model_copy(update={"replica_map": rows})
                stored = await self.kv.update_status(Topic.kind, topic.name, status, topic.revision)
                if stored.spec.partitions < len(rows):
                    spec = stored.spec.model_copy(update={"partitions": len(rows)})
                    await self.kv.update_spec(Topic.kind, topic.name, spec, stored.revision)
                return
            except ConflictError:
                continue  # changed meanwhile: read it again
            except NotFoundError:
                return
        log.warning("rebuild: topic %s not grown (busy object)", growth.topic)

    async def _raise_epoch(self, raised: EpochRaise) -> None:
        for _ in range(3):
            partition = await self.kv.get(Partition.kind, raised.partition)
            if not isinstance(partition, Partition):
                return
            if partition.status.leader_epoch >= raised.leader_epoch:
                return
            status = partition.status.model_copy(
                update={"leader": raised.leader, "leader_epoch": raised.leader_epoch}
            )
            try:
                await self.kv.update_status(
                    Partition.kind, partition.name, status, partition.revision
                )
                return
            except ConflictError:
                continue
            except NotFoundError:
                return
        log.warning("rebuild: partition %s epoch not raised (busy object)", raised.partition)
