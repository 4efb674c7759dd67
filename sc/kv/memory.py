"""In-memory KV store for unit tests and single-process embedded use.

Same contract as the Redis store (see ``sc.kv.store``): objects live in dicts, the
change feed is a bounded deque of ``ChangeEvent``s with contiguous revisions, and each
write runs without an ``await`` in the middle, so it is atomic for every coroutine on
the loop. Watchers wait on an ``asyncio.Event`` that each write sets and replaces.
Group owner maps and offsets (``sc.kv.groups``) are dicts per group name. The lease
runs the rules of ``sc.lease`` on ``clock``; every write checks the fence first.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Mapping
from typing import Any

from sc.kv import groups as g
from sc.kv.groups import (
    GROUP_KIND,
    CommitOutcome,
    CommitResult,
    Grant,
    OffsetCommit,
    StoredOffset,
    TopicPartition,
)
from sc.kv.store import (
    DEFAULT_FEED_RETENTION,
    TOMBSTONES_MAX,
    ChangeEvent,
    ChangeType,
    KindFilter,
    KvStore,
    Resync,
    WatchEvent,
    coerce_part,
    new_uid,
    watched_kinds,
)
from sc.lease import LeaseClaim, LeaseRecord, claim, renew
from spark_stream.errors import (
    ConflictError,
    GroupNotEmptyError,
    NotFoundError,
    ObjectExistsError,
    UnknownGroupError,
    UnknownPartitionError,
)
from spark_stream.models import KvObject, Partition, object_class, partition_name

__all__ = ["MemoryKvStore"]

_Key = tuple[str, str]


class MemoryKvStore(KvStore):
    """The KV store contract held in process memory.

    Args:
        feed_retention: how many changes the feed keeps; a watcher further behind
            receives a ``Resync``.
        clock: the lease's clock, in seconds (a fake one in tests).
    """

    def __init__(
        self,
        feed_retention: int = DEFAULT_FEED_RETENTION,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if feed_retention < 1:
            raise ValueError("feed_retention must be >= 1")
        self._objects: dict[str, dict[str, KvObject[Any, Any]]] = {}
        self._children: dict[_Key, set[_Key]] = {}
        self._revision = 0
        self._store_id = new_uid()
        self._tombstones: dict[str, None] = {}  # insertion-ordered: oldest first
        self._feed: deque[ChangeEvent] = deque(maxlen=feed_retention)
        self._wakeup = asyncio.Event()
        self._closed = False
        self._owners: dict[str, dict[TopicPartition, Grant]] = {}
        self._offsets: dict[str, dict[TopicPartition, StoredOffset]] = {}
        self._clock = clock
        self._lease: LeaseRecord | None = None
        self._last_token = 0

    # -- lease ---------------------------------------------------------------------

    async def claim_lease(self, holder: str, ttl_s: float) -> LeaseClaim:
        answer, self._lease, self._last_token = claim(
            self._lease, self._last_token, holder, self._clock(), ttl_s
        )
        return answer

    async def renew_lease(self, token: int, holder: str, ttl_s: float) -> LeaseClaim:
        answer, self._lease = renew(
            self._lease, self._last_token, token, holder, self._clock(), ttl_s
        )
        return answer

    async def release_lease(self, token: int) -> None:
        if self._lease is not None and self._lease.token == token:
            self._lease = None

    async def lease_holder(self) -> LeaseClaim:
        lease = self._lease
        if lease is None or self._clock() >= lease.expires_at:
            return LeaseClaim(False, 0, "")
        return LeaseClaim(False, lease.token, lease.holder)

    def _check_fence(self) -> None:
        """Refuse a write whose token is no longer the last issued (before any change)."""
        if self._fence is not None and self._fence != self._last_token:
            raise self._deposed(self._last_token)

    # -- reads ---------------------------------------------------------------------

    async def get(self, kind: str, name: str) -> KvObject[Any, Any] | None:
        object_class(kind)
        return self._objects.get(kind, {}).get(name)

    async def list_objects(self, kind: str) -> tuple[list[KvObject[Any, Any]], int]:
        objects, revision = self._snapshot((kind,))
        return objects[kind], revision

    async def list_kinds(
        self, kinds: KindFilter = None
    ) -> tuple[dict[str, list[KvObject[Any, Any]]], int]:
        return self._snapshot(watched_kinds(kinds))

    async def revision(self) -> int:
        return self._revision

    def _snapshot(self, kinds: tuple[str, ...]) -> tuple[dict[str, list[KvObject[Any, Any]]], int]:
        for kind in kinds:
            object_class(kind)
        out = {}
        for kind in kinds:
            table = self._objects.get(kind, {})
            out[kind] = [table[name] for name in sorted(table)]
        return out, self._revision

    # -- writes --------------------------------------------------------------------

    async def store_id(self) -> str:
        self._check_fence()  # as on Redis, where the first ask names the store
        return self._store_id

    async def add_tombstones(self, uids: Collection[str]) -> None:
        if not uids:
            return
        self._check_fence()
        for uid in uids:
            self._tombstones.pop(uid, None)
            self._tombstones[uid] = None
        while len(self._tombstones) > TOMBSTONES_MAX:
            del self._tombstones[next(iter(self._tombstones))]

    async def tombstones(self) -> frozenset[str]:
        return frozenset(self._tombstones)

    async def create(
        self, obj: KvObject[Any, Any], *, keep_uid: bool = False
    ) -> KvObject[Any, Any]:
        self._check_fence()
        kind = obj.kind
        object_class(kind)
        table = self._objects.setdefault(kind, {})
        if obj.name in table:
            raise ObjectExistsError(f"{kind} {obj.name!r} already exists")
        parent = obj.metadata.parent
        if parent is not None:
            if parent.name not in self._objects.get(parent.kind, {}):
                raise NotFoundError(
                    f"{kind} {obj.name!r}: parent {parent.kind} {parent.name!r} does not exist"
                )
            self._children.setdefault((parent.kind, parent.name), set()).add((kind, obj.name))
        uid = obj.uid if keep_uid and obj.uid else new_uid()
        stored = obj.with_uid(uid).with_revision(self._revision + 1)
        table[obj.name] = stored
        self._append(ChangeType.ADDED, stored)
        return stored

    async def update_spec(
        self, kind: str, name: str, spec: Any, expected_revision: int
    ) -> KvObject[Any, Any]:
        spec = coerce_part(kind, "spec", spec)
        self._check_fence()
        current = self._current(kind, name, expected_revision)
        return self._replace(current.with_spec(spec))

    async def update_status(
        self, kind: str, name: str, status: Any, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
        status = coerce_part(kind, "status", status)
        self._check_fence()
        current = self._current(kind, name, expected_revision)
        return self._replace(current.with_status(status))

    async def delete(
        self, kind: str, name: str, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
        if kind == GROUP_KIND:
            return await self.delete_group(name, expected_revision, kind=kind)
        self._check_fence()
        current = self._current(kind, name, expected_revision)
        self._remove(current)
        return current

    def _current(self, kind: str, name: str, expected: int | None) -> KvObject[Any, Any]:
        object_class(kind)
        current = self._objects.get(kind, {}).get(name)
        if current is None:
            raise NotFoundError(f"{kind} {name!r} does not exist")
        if expected is not None and current.revision != expected:
            raise ConflictError(
                f"{kind} {name!r} is at revision {current.revision}, not {expected}"
            )
        return current

    def _replace(self, obj: KvObject[Any, Any]) -> KvObject[Any, Any]:
        stored = obj.with_revision(self._revision + 1)
        self._objects[obj.kind][obj.name] = stored
        self._append(ChangeType.MODIFIED, stored)
        return stored

    def _remove(self, obj: KvObject[Any, Any]) -> None:
        # Children go first, so once a watcher sees the parent deleted, they are gone too.
        for child_kind, child_name in sorted(self._children.pop((obj.kind, obj.name), ())):
            child = self._objects.get(child_kind, {}).get(child_name)
            if child is not None:
                self._remove(child)
        parent = obj.metadata.parent
        if parent is not None:
            self._children.get((parent.kind, parent.name), set()).discard((obj.kind, obj.name))
        if obj.kind == Partition.kind:
            self._purge_partition(obj.name)
        del self._objects[obj.kind][obj.name]
        self._append(ChangeType.DELETED, obj)

    def _purge_partition(self, name: str) -> None:
        """Remove a deleted partition's grant and offset from every group."""
        topic, _, index = name.rpartition("-")
        tp = (topic, int(index))
        for owners in self._owners.values():
            owners.pop(tp, None)
        for offsets in self._offsets.values():
            offsets.pop(tp, None)

    def _append(self, change: ChangeType, obj: KvObject[Any, Any]) -> None:
        self._revision += 1
        self._feed.append(ChangeEvent(obj.kind, obj.name, change, obj, self._revision))
        self._wakeup.set()
        self._wakeup = asyncio.Event()

    # -- consumer groups ------------------------------------------------------------

    async def publish_group_plan(
        self,
        name: str,
        status: Any,
        owners: Mapping[TopicPartition, Grant],
        expected_revision: int,
        *,
        kind: str = GROUP_KIND,
    ) -> KvObject[Any, Any]:
        status = coerce_part(kind, "status", status)
        owners = g.check_owners(owners)
        self._check_fence()
        current = self._current(kind, name, expected_revision)
        stored = self._replace(current.with_status(status))
        self._owners[name] = dict(owners)
        return stored

    async def fetch_group_owners(self, name: str) -> dict[TopicPartition, Grant]:
        g.check_group_name(name)
        return dict(self._owners.get(name, {}))

    async def commit_group_offsets(
        self, name: str, member_id: str, commits: Collection[OffsetCommit]
    ) -> list[CommitResult]:
        g.check_group_name(name)
        g.check_member_id(member_id)
        checked = g.check_commits(commits)
        self._check_fence()
        ts_ms = time.time_ns() // 1_000_000
        owners = self._owners.get(name, {})
        offsets = self._offsets.get(name, {})
        results = []
        for commit in checked:
            stored = offsets.get(commit.tp)
            committed = None if stored is None else stored.offset
            if not self._has_partition(commit.tp):
                outcome = CommitOutcome.UNKNOWN_PARTITION
            elif owners.get(commit.tp) != (member_id, commit.grant_epoch):
                outcome = CommitOutcome.FENCED
            elif committed is not None and commit.offset < committed:
                outcome = CommitOutcome.BACKWARDS
            else:
                outcome, committed = CommitOutcome.ACCEPTED, commit.offset
                offsets = self._offsets.setdefault(name, offsets)
                offsets[commit.tp] = StoredOffset(
                    commit.offset, commit.grant_epoch, ts_ms, commit.metadata
                )
            results.append(CommitResult(commit.topic, commit.partition, outcome, committed))
        return results

    async def write_group_offsets(
        self,
        name: str,
        offsets: Mapping[TopicPartition, int],
        *,
        metadata: str = "",
        kind: str = GROUP_KIND,
    ) -> None:
        g.check_group_name(name)
        checked = g.check_offsets(offsets)
        g.check_metadata(metadata)
        object_class(kind)
        self._check_fence()
        if name not in self._objects.get(kind, {}):
            raise UnknownGroupError(f"group {name!r} does not exist")
        if self._owners.get(name):
            raise GroupNotEmptyError(f"group {name!r} holds grants: offsets not written")
        for tp in checked:
            if not self._has_partition(tp):
                raise UnknownPartitionError(f"partition {g.field(*tp)} does not exist")
        ts_ms = time.time_ns() // 1_000_000
        table = self._offsets.setdefault(name, {})
        for tp, offset in checked.items():
            table[tp] = StoredOffset(offset, None, ts_ms, metadata)

    async def fetch_group_offsets(
        self, name: str, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, StoredOffset]:
        g.check_group_name(name)
        table = self._offsets.get(name, {})
        if partitions is None:
            return dict(table)
        wanted = g.check_partitions(partitions)
        return {tp: table[tp] for tp in wanted if tp in table}

    async def delete_group_offsets(self, name: str, topic: str | None = None) -> int:
        g.check_group_name(name)
        if topic is not None:
            g.check_topic(topic)
        self._check_fence()
        if any(topic in (None, t) for t, _ in self._owners.get(name, {})):
            raise GroupNotEmptyError(f"group {name!r} holds grants: offsets not deleted")
        table = self._offsets.get(name, {})
        doomed = [tp for tp in table if topic in (None, tp[0])]
        for tp in doomed:
            del table[tp]
        return len(doomed)

    async def delete_group(
        self, name: str, expected_revision: int | None = None, *, kind: str = GROUP_KIND
    ) -> KvObject[Any, Any]:
        self._check_fence()
        current = self._current(kind, name, expected_revision)
        if self._owners.get(name):
            raise GroupNotEmptyError(f"group {name!r} holds grants: not deleted")
        self._remove(current)
        self._owners.pop(name, None)
        self._offsets.pop(name, None)
        return current

    def _has_partition(self, tp: TopicPartition) -> bool:
        return partition_name(*tp) in self._objects.get(Partition.kind, {})

    # -- watch ---------------------------------------------------------------------

    def watch(self, kinds: KindFilter, from_revision: int) -> AsyncIterator[WatchEvent]:
        names = watched_kinds(kinds)
        if from_revision < 0:
            raise ValueError("from_revision must be >= 0")
        return self._watch(names, from_revision)

    async def _watch(self, kinds: tuple[str, ...], last: int) -> AsyncGenerator[WatchEvent, None]:
        wanted = frozenset(kinds)
        while not self._closed:
            wakeup = self._wakeup
            events = self._after(last)
            if events is None:
                objects, last = self._snapshot(kinds)
                yield Resync(last, {kind: tuple(objs) for kind, objs in objects.items()})
                continue
            for event in events:
                last = event.revision
                if event.kind in wanted:
                    yield event
            if not events:
                await wakeup.wait()

    def _after(self, last: int) -> list[ChangeEvent] | None:
        """The retained changes after ``last``; ``None`` when some were trimmed."""
        if last == self._revision:
            return []
        if last > self._revision or not self._feed or self._feed[0].revision > last + 1:
            return None
        start = last + 1 - self._feed[0].revision
        return list(itertools.islice(self._feed, start, None))

    async def close(self) -> None:
        self._closed = True
        self._wakeup.set()
