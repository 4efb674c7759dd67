"""In-memory KV store for unit tests and single-process embedded use.

Same contract as the Redis store (see ``sc.kv.store``): objects live in dicts, the
change feed is a bounded deque of ``ChangeEvent``s with contiguous revisions, and each
write runs without an ``await`` in the middle, so it is atomic for every coroutine on
the loop. Watchers wait on an ``asyncio.Event`` that each write sets and replaces.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from sc.kv.store import (
    DEFAULT_FEED_RETENTION,
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
from spark_stream.errors import ConflictError, NotFoundError, ObjectExistsError
from spark_stream.models import KvObject, object_class

__all__ = ["MemoryKvStore"]

_Key = tuple[str, str]


class MemoryKvStore(KvStore):
    """The KV store contract held in process memory.

    Args:
        feed_retention: how many changes the feed keeps; a watcher further behind
            receives a ``Resync``.
    """

    def __init__(self, feed_retention: int = DEFAULT_FEED_RETENTION) -> None:
        if feed_retention < 1:
            raise ValueError("feed_retention must be >= 1")
        self._objects: dict[str, dict[str, KvObject[Any, Any]]] = {}
        self._children: dict[_Key, set[_Key]] = {}
        self._revision = 0
        self._feed: deque[ChangeEvent] = deque(maxlen=feed_retention)
        self._wakeup = asyncio.Event()
        self._closed = False

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

    async def create(self, obj: KvObject[Any, Any]) -> KvObject[Any, Any]:
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
        stored = obj.with_uid(new_uid()).with_revision(self._revision + 1)
        table[obj.name] = stored
        self._append(ChangeType.ADDED, stored)
        return stored

    async def update_spec(
        self, kind: str, name: str, spec: Any, expected_revision: int
    ) -> KvObject[Any, Any]:
        spec = coerce_part(kind, "spec", spec)
        current = self._current(kind, name, expected_revision)
        return self._replace(current.with_spec(spec))

    async def update_status(
        self, kind: str, name: str, status: Any, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
        status = coerce_part(kind, "status", status)
        current = self._current(kind, name, expected_revision)
        return self._replace(current.with_status(status))

    async def delete(
        self, kind: str, name: str, expected_revision: int | None = None
    ) -> KvObject[Any, Any]:
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
        del self._objects[obj.kind][obj.name]
        self._append(ChangeType.DELETED, obj)

    def _append(self, change: ChangeType, obj: KvObject[Any, Any]) -> None:
        self._revision += 1
        self._feed.append(ChangeEvent(obj.kind, obj.name, change, obj, self._revision))
        self._wakeup.set()
        self._wakeup = asyncio.Event()

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
