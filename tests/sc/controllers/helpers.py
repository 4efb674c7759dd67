"""Builders for controller tests, and a tiny in-memory KV updater to drive reducers.

``Cluster`` holds a ``LocalStore`` and applies the KV actions reducers emit the way the
updater + change feed would (each write bumps the revision and comes back as a
``Change``), so a test can run a whole workflow to its fixed point.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sc.actions import Action, KvAction, KvCreate, KvDelete, KvUpdateSpec, KvUpdateStatus
from sc.controllers import Change, ControllerEvent, reduce_all
from sc.kv.store import ChangeEvent, ChangeType
from sc.local_store import LocalStore
from spark_stream.models import (
    KINDS,
    KvObject,
    Partition,
    PartitionResolution,
    PartitionSpec,
    PartitionStatus,
    ReplicaStatus,
    Spu,
    SpuGroup,
    SpuGroupResolution,
    SpuGroupSpec,
    SpuGroupStatus,
    SpuResolution,
    SpuSpec,
    SpuStatus,
    Topic,
    TopicResolution,
    TopicSpec,
    TopicStatus,
)

ONLINE = SpuResolution.ONLINE
OFFLINE = SpuResolution.OFFLINE


def make_spu(
    spu_id: int,
    resolution: SpuResolution = ONLINE,
    *,
    rack: str | None = None,
    name: str | None = None,
    rev: int = 1,
) -> Spu:
    spec = SpuSpec(spu_id=spu_id, rack=rack)
    spu = Spu.new(name or f"spu-{spu_id}", spec, SpuStatus(resolution=resolution))
    return spu.with_revision(rev)


def make_topic(
    name: str,
    partitions: int = 1,
    factor: int = 1,
    *,
    resolution: TopicResolution = TopicResolution.INIT,
    replica_map: dict[int, tuple[int, ...]] | None = None,
    reason: str | None = None,
    rev: int = 1,
    **spec: Any,
) -> Topic:
    status = TopicStatus(resolution=resolution, replica_map=replica_map or {}, reason=reason)
    topic_spec = TopicSpec(partitions=partitions, replication_factor=factor, **spec)
    return Topic.new(name, topic_spec, status).with_revision(rev)


def make_partition(
    topic: str,
    index: int,
    replicas: Sequence[int],
    *,
    resolution: PartitionResolution = PartitionResolution.ONLINE,
    leader: int | None = None,
    lrs: Sequence[tuple[int, int, bool]] | None = None,
    unclean: bool = False,
    rev: int = 1,
) -> Partition:
    spec = PartitionSpec(
        initial_leader=replicas[0],
        replicas=tuple(replicas),
        unclean_leader_election=unclean,
        min_in_sync_replicas=1,
    )
    if resolution is PartitionResolution.INIT:
        status = PartitionStatus()
    else:
        status = PartitionStatus(
            resolution=resolution,
            leader=replicas[0] if leader is None else leader,
            lrs=tuple(ReplicaStatus(spu_id=s, leo=leo, in_sync=ok) for s, leo, ok in lrs or ()),
        )
    return Partition.new(topic, index, spec, status).with_revision(rev)


def make_group(
    name: str,
    replicas: int,
    min_id: int,
    *,
    resolution: SpuGroupResolution = SpuGroupResolution.INIT,
    reason: str | None = None,
    rev: int = 1,
    **spec: Any,
) -> SpuGroup:
    status = SpuGroupStatus(resolution=resolution, reason=reason)
    group_spec = SpuGroupSpec(replicas=replicas, min_id=min_id, **spec)
    return SpuGroup.new(name, group_spec, status).with_revision(rev)


def added(obj: KvObject[Any, Any]) -> Change:
    return Change(obj.kind, obj.name, ChangeType.ADDED, None, obj, obj.revision)


def modified(old: KvObject[Any, Any], new: KvObject[Any, Any]) -> Change:
    return Change(new.kind, new.name, ChangeType.MODIFIED, old, new, new.revision)


def deleted(obj: KvObject[Any, Any]) -> Change:
    return Change(obj.kind, obj.name, ChangeType.DELETED, obj, None, obj.revision + 1)


def kv_actions(actions: Iterable[Action]) -> list[KvAction]:
    """The actions that would write to the KV store."""
    return [a for a in actions if isinstance(a, KvAction)]


class Cluster:
    """A ``LocalStore`` plus a fake KV updater that turns KV actions into changes."""

    def __init__(self, *objects: KvObject[Any, Any]) -> None:
        self.store = LocalStore.of(objects)
        self.revision = self.store.revision
        self.log: list[Action] = []

    def put(self, obj: KvObject[Any, Any]) -> Change:
        """Write ``obj`` as the next revision (an admin create or update)."""
        return self._emit(ChangeType.MODIFIED, obj)

    def remove(self, kind: str, name: str) -> list[Change]:
        """Delete an object and its children (as the KV store does), children first."""
        changes: list[Change] = []
        obj = self.store.get(kind, name)
        assert obj is not None
        for child_kind in KINDS:
            for child in self.store.objects(child_kind):
                parent = child.metadata.parent
                if parent is not None and (parent.kind, parent.name) == (kind, name):
                    changes += self.remove(child_kind, child.name)
        changes.append(self._emit(ChangeType.DELETED, obj))
        return changes

    def _emit(self, kind: ChangeType, obj: KvObject[Any, Any]) -> Change:
        self.revision += 1
        stored = obj.with_revision(self.revision)
        change = self.store.apply(ChangeEvent(obj.kind, obj.name, kind, stored, self.revision))
        assert change is not None
        return change

    def execute(self, action: KvAction) -> list[Change]:
        """Apply one KV action; return the changes it produced."""
        match action:
            case KvCreate(obj=obj):
                assert self.store.get(obj.kind, obj.name) is None, f"duplicate create {obj.name}"
                return [self._emit(ChangeType.ADDED, obj)]
            case KvUpdateSpec(kind=kind, name=name, spec=spec):
                return [self._emit(ChangeType.MODIFIED, self._existing(kind, name).with_spec(spec))]
            case KvUpdateStatus(kind=kind, name=name, status=status):
                obj = self._existing(kind, name)
                return [self._emit(ChangeType.MODIFIED, obj.with_status(status))]
            case KvDelete(kind=kind, name=name):
                return self.remove(kind, name)
        raise AssertionError(f"not a KV action: {action}")

    def _existing(self, kind: str, name: str) -> KvObject[Any, Any]:
        obj = self.store.get(kind, name)
        assert obj is not None, f"write to missing {kind} {name}"
        return obj

    def run(self, *events: ControllerEvent, limit: int = 50) -> list[Action]:
        """Reduce ``events`` and every change their KV actions cause, to a fixed point.

        Returns every action emitted on the way (also appended to ``log``).
        """
        queue: list[ControllerEvent] = list(events)
        emitted: list[Action] = []
        for _ in range(limit):
            if not queue:
                return emitted
            event = queue.pop(0)
            actions = reduce_all(self.store, event)
            emitted += actions
            for action in kv_actions(actions):
                queue += self.execute(action)
        raise AssertionError(f"no fixed point after {limit} events; pending {queue[:3]}")

    def spu(self, spu_id: int) -> Spu:
        found = self.store.spu(spu_id)
        assert found is not None
        return found

    def set_spu(self, spu_id: int, resolution: SpuResolution) -> Change:
        """Write an SPU status directly (as the SPU controller's updater would)."""
        spu = self.spu(spu_id)
        return self.put(spu.with_status(SpuStatus(resolution=resolution)))
