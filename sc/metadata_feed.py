"""The metadata watch's feed: recent changes, coalesced and encoded once for all watchers.

Theory of operation. The dispatcher tells the feed of every batch of changes the mirror
makes (``on_changes``). The feed keeps those a watcher needs (SPUs, topics, partitions;
not a partition's LEO/HW moving), the new state only (the mirror's own object, no copy),
in revision order under a sequence number. Each watch stream
(``updates``) holds a position in that sequence. When it is behind, it takes everything
from its position on (at most ``max_items``) as one incremental update, the latest state
of each object once: a burst (a topic of 1,000 partitions) reaches a watcher as one or a
few messages, and a single change goes out as soon as it is there (no timer).

Updates are encoded once. The feed caches the encoded bytes of each range of changes and
of the snapshot at each position, so watchers at the same position (every watcher that
keeps up) share one encoding: a change costs its encoding once plus a send per watcher,
not an encoding per watcher. A watcher naming a revision the feed no longer holds, and
every watcher after a resync, starts over with a full snapshot.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncGenerator, Iterable
from typing import Any

from sc.local_store import Change, StoreView
from spark_stream.models import KvObject, Partition, Spu, Topic
from spark_stream.protocol import Encoded
from spark_stream.protocol import control as c

__all__ = ["MetadataFeed", "WATCHED", "coalesce", "interesting", "wire_dict"]

WATCHED = (Spu.kind, Topic.kind, Partition.kind)
"""The kinds a metadata watch carries."""

_RANGES_KEPT = 16  # encoded ranges cached: watchers rarely sit at more positions at once

Entry = tuple[str, str, "KvObject[Any, Any] | None"]
"""One change as the feed keeps it: kind, name, the new state (None: deleted)."""


def interesting(change: Change) -> bool:
    """Whether a watcher needs this change (not a partition's LEO/HW moving)."""
    if change.kind not in WATCHED:
        return False
    old, new = change.old, change.new
    if isinstance(old, Partition) and isinstance(new, Partition):
        return (
            old.spec != new.spec
            or old.status.leader != new.status.leader
            or old.status.resolution != new.status.resolution
        )
    return True


def wire_dict(obj: KvObject[Any, Any]) -> dict[str, Any]:
    """An object as the watch sends it (an SPU without its secrets)."""
    return obj.public_dict() if isinstance(obj, Spu) else obj.to_dict()


def coalesce(entries: Iterable[Entry]) -> dict[str, list[dict[str, Any]]]:
    """The lists of one incremental update from ``entries`` in change order.

    Each object appears once, with its last state (``wire_dict``: an object changed
    many times in a burst is dumped once), in the order of its last change; an object
    whose last change deleted it is in ``deleted`` only.

    Returns:
        ``spus``, ``topics``, ``partitions`` (wire dicts) and ``deleted``
        (``{"kind", "name"}``), as ``MetadataUpdate`` takes them.
    """
    last: dict[tuple[str, str], KvObject[Any, Any] | None] = {}
    for kind, name, obj in entries:
        last.pop((kind, name), None)  # re-insert: order by the last change
        last[(kind, name)] = obj
    lists: dict[str, list[dict[str, Any]]] = {kind: [] for kind in WATCHED}
    deleted: list[dict[str, Any]] = []
    for (kind, name), obj in last.items():
        if obj is None:
            deleted.append({"kind": kind, "name": name})
        else:
            lists[kind].append(wire_dict(obj))
    return {
        "spus": lists[Spu.kind],
        "topics": lists[Topic.kind],
        "partitions": lists[Partition.kind],
        "deleted": deleted,
    }


class MetadataFeed:
    """Recent metadata changes, in revision order, for the watch streams.

    Args:
        store: the mirror, for full snapshots.
        capacity: changes kept; a watcher further behind gets a full snapshot.
    """

    def __init__(self, store: StoreView, capacity: int = 20_000) -> None:
        self.store = store
        self.capacity = capacity
        self._revisions: list[int] = []
        self._changes: list[Entry] = []  # only the new state: old versions are not kept
        self._base = 0  # sequence number of _changes[0]
        self.start_revision = store.revision  # watchers from here on can resume
        self.epoch = 0  # bumped on a resync: every watcher starts over with a snapshot
        self._wakeup = asyncio.Event()
        # (epoch, first position) -> the end of the range sent from there and its
        # update, encoded once: later watchers at that position get the same bytes.
        self._ranges: dict[tuple[int, int], tuple[int, Encoded]] = {}
        # (epoch, position) -> the snapshot at that position, encoded once.
        self._snapshot: tuple[tuple[int, int], Encoded] | None = None

    def on_changes(self, changes: list[Change], resync: bool) -> None:
        """Dispatcher listener: record the changes watchers care about."""
        if resync:
            self.epoch += 1
            self._base += len(self._changes)
            self._changes.clear()
            self._revisions.clear()
            self._ranges.clear()
            self._snapshot = None
            self.start_revision = self.store.revision
        else:
            for change in changes:
                if interesting(change):
                    self._changes.append((change.kind, change.name, change.new))
                    self._revisions.append(change.revision)
            if len(self._changes) > self.capacity:
                cut = len(self._changes) - self.capacity
                del self._changes[:cut], self._revisions[:cut]
                self._base += cut
                self.start_revision = self._revisions[0] - 1
        self._wakeup.set()
        self._wakeup = asyncio.Event()

    def snapshot(self) -> tuple[Encoded, int]:
        """A full update from the mirror, encoded, and the feed position right after it.

        Built once per position: watchers opening while nothing they watch changed
        share it (a partition's LEO/HW in it may be older; the watch does not carry
        those)."""
        pos = self._base + len(self._changes)
        key = (self.epoch, pos)
        if self._snapshot is None or self._snapshot[0] != key:
            store = self.store
            update = c.MetadataUpdate(
                True,
                store.revision,
                spus=[s.public_dict() for s in store.spus()],
                topics=[t.to_dict() for t in store.topics()],
                partitions=[p.to_dict() for p in store.partitions()],
            )
            self._snapshot = (key, Encoded.of(update))
        return self._snapshot[1], pos

    def position_after(self, revision: int) -> int | None:
        """The feed position of the first change after ``revision``, if still held."""
        if revision < self.start_revision or revision > self.store.revision:
            return None
        return self._base + bisect.bisect_right(self._revisions, revision)

    def _range(self, first: int, max_items: int) -> tuple[Encoded, int]:
        """The incremental update from position ``first`` (held, not the last) and the
        position after it: what the first watcher at ``first`` was sent, when it is
        not longer than ``max_items`` (watchers at one position share its bytes; one
        that is further along picks the rest up with its next push), else
        everything held from ``first`` on, at most ``max_items``."""
        key = (self.epoch, first)
        cached = self._ranges.get(key)
        if cached is not None and cached[0] - first <= max_items:
            return cached[1], cached[0]
        end = min(self._base + len(self._changes), first + max_items)
        batch = self._changes[first - self._base : end - self._base]
        revision = self._revisions[end - self._base - 1]
        encoded = Encoded.of(c.MetadataUpdate(False, revision, **coalesce(batch)))
        if len(self._ranges) >= _RANGES_KEPT:
            del self._ranges[next(iter(self._ranges))]  # the oldest
        self._ranges[key] = (end, encoded)
        return encoded, end

    async def updates(
        self, from_revision: int | None, max_items: int = 5000
    ) -> AsyncGenerator[Encoded, None]:
        """The pushes of one watch stream (encoded ``MetadataUpdate``s): a snapshot or
        the missed changes, then everything new since the last push, as it comes."""
        epoch = self.epoch
        pos = None if from_revision is None else self.position_after(from_revision)
        if pos is None:
            update, pos = self.snapshot()
            yield update
        while True:
            if epoch != self.epoch or pos < self._base:  # a resync, or fell behind
                epoch = self.epoch
                update, pos = self.snapshot()
                yield update
                continue
            if pos >= self._base + len(self._changes):
                await self._wakeup.wait()
                continue
            update, pos = self._range(pos, max_items)
            yield update
