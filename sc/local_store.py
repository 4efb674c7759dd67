"""The SC's local store: a read-only mirror of the KV that controllers read.

Theory of operation:

- The metadata dispatcher is the only writer. It feeds the KV change feed in:
  ``apply(ChangeEvent)`` for one change, ``replace(objects, revision)`` for a full
  listing (start-up, or a ``Resync`` after the watcher fell behind). Each returns the
  ``Change``s it made (kind, name, old and new object), which are exactly the events
  the controllers reduce.
- Changes are idempotent: an event at or below the revision already held for that
  object is ignored (a redelivery after a reconnect), and a ``MODIFIED`` for an object
  the mirror lacks becomes ``ADDED``, so controllers always see an object's birth.
- Controllers get the ``StoreView`` part only: lookups and snapshot queries (SPUs,
  online SPUs, topics by resolution, partitions of a topic or led by an SPU). Results
  are sorted by name or id, so every reducer is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sc.kv.store import ChangeEvent, ChangeType, Resync
from spark_stream.models import (
    KINDS,
    KvObject,
    Partition,
    Spu,
    SpuGroup,
    Topic,
    TopicResolution,
)

__all__ = ["Change", "StoreView", "LocalStore"]

AnyKvObject = KvObject[Any, Any]


@dataclass(frozen=True, slots=True)
class Change:
    """One change the mirror made: what a controller reacts to.

    Attributes:
        kind: the object's kind.
        name: the object's name.
        type: ``ADDED``, ``MODIFIED`` or ``DELETED``.
        old: the object before (``None`` when added).
        new: the object after (``None`` when deleted).
        revision: the store revision of the change.
    """

    kind: str
    name: str
    type: ChangeType
    old: AnyKvObject | None
    new: AnyKvObject | None
    revision: int

    @property
    def object(self) -> AnyKvObject:
        """The object as it is now, or as it was last when deleted."""
        obj = self.new if self.new is not None else self.old
        assert obj is not None  # a Change always carries one side
        return obj


class StoreView:
    """Read-only queries over the mirrored objects (what controllers may use)."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, AnyKvObject]] = {kind: {} for kind in KINDS}
        self._by_topic: dict[str, set[str]] = {}  # topic name -> its partitions' names
        self._revision = 0

    @property
    def revision(self) -> int:
        """The highest store revision the mirror has seen."""
        return self._revision

    def get(self, kind: str, name: str) -> AnyKvObject | None:
        """The object of ``kind`` named ``name``, if mirrored."""
        return self._objects.get(kind, {}).get(name)

    def objects(self, kind: str) -> list[AnyKvObject]:
        """Every object of ``kind``, sorted by name."""
        table = self._objects.get(kind, {})
        return [table[name] for name in sorted(table)]

    # -- SPUs ----------------------------------------------------------------------

    def spus(self) -> list[Spu]:
        """Every registered SPU, sorted by SPU id."""
        table: Mapping[str, Any] = self._objects[Spu.kind]
        return sorted(table.values(), key=lambda spu: (spu.spu_id, spu.name))

    def spu(self, spu_id: int) -> Spu | None:
        """The SPU with id ``spu_id`` (the first by name if ids were ever duplicated)."""
        for spu in self.spus():
            if spu.spu_id == spu_id:
                return spu
        return None

    def spu_by_name(self, name: str) -> Spu | None:
        """The SPU object named ``name``."""
        obj = self._objects[Spu.kind].get(name)
        return obj if isinstance(obj, Spu) else None

    def online_spu_ids(self) -> frozenset[int]:
        """Ids of the SPUs whose status is ``Online``."""
        return frozenset(spu.spu_id for spu in self.spus() if spu.status.is_online)

    # -- SPU groups ----------------------------------------------------------------

    def spu_groups(self) -> list[SpuGroup]:
        """Every SPU group, sorted by name."""
        return [obj for obj in self.objects(SpuGroup.kind) if isinstance(obj, SpuGroup)]

    def spu_group(self, name: str) -> SpuGroup | None:
        """The SPU group named ``name``."""
        obj = self._objects[SpuGroup.kind].get(name)
        return obj if isinstance(obj, SpuGroup) else None

    # -- topics --------------------------------------------------------------------

    def topics(self) -> list[Topic]:
        """Every topic, sorted by name."""
        return [obj for obj in self.objects(Topic.kind) if isinstance(obj, Topic)]

    def topic(self, name: str) -> Topic | None:
        """The topic named ``name``."""
        obj = self._objects[Topic.kind].get(name)
        return obj if isinstance(obj, Topic) else None

    def topics_by_resolution(self, *resolutions: TopicResolution) -> list[Topic]:
        """Topics whose status resolution is one of ``resolutions``, sorted by name."""
        return [t for t in self.topics() if t.status.resolution in resolutions]

    # -- partitions ----------------------------------------------------------------

    def partitions(self) -> list[Partition]:
        """Every partition, sorted by name."""
        return [obj for obj in self.objects(Partition.kind) if isinstance(obj, Partition)]

    def partition(self, name: str) -> Partition | None:
        """The partition named ``name``."""
        obj = self._objects[Partition.kind].get(name)
        return obj if isinstance(obj, Partition) else None

    def partitions_of(self, topic: str) -> list[Partition]:
        """The partitions whose parent is ``topic``, sorted by index."""
        table = self._objects[Partition.kind]
        found = [table[name] for name in self._by_topic.get(topic, ())]
        return sorted((p for p in found if isinstance(p, Partition)), key=lambda p: p.index)

    def partitions_led_by(self, spu_id: int) -> list[Partition]:
        """Partitions whose status names ``spu_id`` as leader, sorted by name."""
        return [p for p in self.partitions() if p.status.leader == spu_id]

    def partition_count(self) -> int:
        """How many partitions the cluster has."""
        return len(self._objects[Partition.kind])


class LocalStore(StoreView):
    """The mirror itself: ``StoreView`` plus the dispatcher's write side."""

    def _put(self, kind: str, obj: AnyKvObject) -> None:
        self._objects.setdefault(kind, {})[obj.name] = obj
        if isinstance(obj, Partition):
            self._by_topic.setdefault(obj.topic, set()).add(obj.name)

    def _drop(self, kind: str, name: str) -> None:
        obj = self._objects.get(kind, {}).pop(name, None)
        if isinstance(obj, Partition):
            names = self._by_topic.get(obj.topic, set())
            names.discard(name)
            if not names:
                self._by_topic.pop(obj.topic, None)

    @classmethod
    def of(cls, objects: Iterable[AnyKvObject], revision: int | None = None) -> LocalStore:
        """A store holding ``objects`` (tests, embedded use).

        ``revision`` defaults to the highest object revision.
        """
        store = cls()
        by_kind: dict[str, list[AnyKvObject]] = {}
        for obj in objects:
            by_kind.setdefault(obj.kind, []).append(obj)
        top = max((obj.revision for objs in by_kind.values() for obj in objs), default=0)
        store.replace(by_kind, top if revision is None else revision)
        return store

    def apply(self, event: ChangeEvent) -> Change | None:
        """Mirror one KV change; return the resulting ``Change``, or ``None`` if stale."""
        table = self._objects.setdefault(event.kind, {})
        old = table.get(event.name)
        if old is not None and old.revision >= event.revision:
            return None
        self._revision = max(self._revision, event.revision)
        if event.type is ChangeType.DELETED:
            if old is None:
                return None
            self._drop(event.kind, event.name)
            return Change(event.kind, event.name, ChangeType.DELETED, old, None, event.revision)
        self._put(event.kind, event.object)
        kind = ChangeType.ADDED if old is None else ChangeType.MODIFIED
        return Change(event.kind, event.name, kind, old, event.object, event.revision)

    def apply_resync(self, resync: Resync) -> list[Change]:
        """Replace the mirrored kinds with a ``Resync`` listing; return the differences."""
        return self.replace(resync.objects, resync.revision)

    def replace(self, objects: Mapping[str, Iterable[AnyKvObject]], revision: int) -> list[Change]:
        """Replace each listed kind with ``objects[kind]`` as of ``revision``.

        Returns:
            The differences as changes (added, modified, deleted), kind by kind in
            ``objects`` order and by name within a kind; unchanged objects yield none.
        """
        changes: list[Change] = []
        for kind, listed in objects.items():
            table = self._objects.setdefault(kind, {})
            fresh = {obj.name: obj for obj in listed}
            for name in sorted(set(table) | set(fresh)):
                old, new = table.get(name), fresh.get(name)
                if new is None:
                    assert old is not None
                    changes.append(Change(kind, name, ChangeType.DELETED, old, None, revision))
                elif old is None:
                    changes.append(Change(kind, name, ChangeType.ADDED, None, new, new.revision))
                elif old.revision != new.revision or old != new:
                    changes.append(Change(kind, name, ChangeType.MODIFIED, old, new, new.revision))
            for name in list(table):
                self._drop(kind, name)
            for obj in fresh.values():
                self._put(kind, obj)
        # A resync after the KV lost data may go back in revisions: the listing wins.
        self._revision = revision
        return changes
