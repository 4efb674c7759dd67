"""The metadata watch feed: coalescing a burst, and one encoding shared by every watcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from sc.kv.store import ChangeEvent, ChangeType
from sc.local_store import Change, LocalStore
from sc.metadata_feed import Entry, MetadataFeed, coalesce, interesting, wire_dict
from spark_stream.models import KvObject, PartitionResolution
from spark_stream.protocol import Encoded, decode_meta
from spark_stream.protocol.control import MetadataUpdate
from tests.sc.controllers.helpers import make_partition, make_spu, make_topic

A, M, D = ChangeType.ADDED, ChangeType.MODIFIED, ChangeType.DELETED
P0 = make_partition("t", 0, [1])
P0B = make_partition("t", 0, [1], leader=2)
P1 = make_partition("t", 1, [1])
T = make_topic("t")
S = make_spu(1)


def _wire(*objects: KvObject[Any, Any]) -> list[dict[str, Any]]:
    return [wire_dict(obj) for obj in objects]


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([], {"spus": [], "topics": [], "partitions": [], "deleted": []}),
        (  # each kind in its list, as its wire dict (an SPU without its secret)
            [("Topic", "t", T), ("Partition", "t-0", P0), ("Spu", "spu-1", S)],
            {"spus": [S.public_dict()], "topics": _wire(T), "partitions": _wire(P0), "deleted": []},
        ),
        (  # the last state only, in the order of the last change
            [("Partition", "t-0", P0), ("Partition", "t-1", P1), ("Partition", "t-0", P0B)],
            {"spus": [], "topics": [], "partitions": _wire(P1, P0B), "deleted": []},
        ),
        (  # created then deleted within the burst: deleted only
            [("Partition", "t-0", P0), ("Partition", "t-0", None)],
            {
                "spus": [],
                "topics": [],
                "partitions": [],
                "deleted": [{"kind": "Partition", "name": "t-0"}],
            },
        ),
        (  # deleted then created again: present, not deleted
            [("Topic", "t", None), ("Topic", "t", T)],
            {"spus": [], "topics": _wire(T), "partitions": [], "deleted": []},
        ),
    ],
)
def test_coalesce(entries: list[Entry], expected: dict[str, Any]) -> None:
    assert coalesce(entries) == expected


def _change(
    kind: ChangeType, old: KvObject[Any, Any] | None, new: KvObject[Any, Any] | None
) -> Change:
    obj = new if new is not None else old
    assert obj is not None
    return Change(obj.kind, obj.name, kind, old, new, 1)


@pytest.mark.parametrize(
    ("change", "wanted"),
    [
        (_change(A, None, make_partition("t", 0, [1])), True),
        (_change(D, make_topic("t"), None), True),
        (_change(M, make_spu(1), make_spu(1, rack="r2")), True),
        (  # offsets moving: not metadata
            _change(
                M,
                make_partition("t", 0, [1], lrs=[(1, 5, True)]),
                make_partition("t", 0, [1], lrs=[(1, 9, True)]),
            ),
            False,
        ),
        (_change(M, make_partition("t", 0, [1]), make_partition("t", 0, [1], leader=2)), True),
        (
            _change(
                M,
                make_partition("t", 0, [1]),
                make_partition("t", 0, [1], resolution=PartitionResolution.OFFLINE),
            ),
            True,
        ),
    ],
)
def test_interesting(change: Change, wanted: bool) -> None:
    assert interesting(change) is wanted


class _Feed:
    """A feed over a local store that test code changes, as the dispatcher would."""

    def __init__(self) -> None:
        self.store = LocalStore()
        self.feed = MetadataFeed(self.store)
        self.revision = 0

    def put(self, *objects: KvObject[Any, Any]) -> None:
        changes = []
        for obj in objects:
            self.revision += 1
            stored = obj.with_revision(self.revision)
            event = ChangeEvent(stored.kind, stored.name, A, stored, self.revision)
            change = self.store.apply(event)
            assert change is not None
            changes.append(change)
        self.feed.on_changes(changes, False)


def _decoded(encoded: Encoded) -> MetadataUpdate:
    return MetadataUpdate.from_meta(decode_meta(encoded.meta))


async def _next(updates: AsyncGenerator[Encoded, None]) -> Encoded:
    return await asyncio.wait_for(anext(updates), 5)


def test_watchers_at_one_position_share_one_encoding() -> None:
    async def body() -> None:
        f = _Feed()
        f.put(make_spu(1), make_topic("t", 2))
        watchers = [f.feed.updates(None) for _ in range(3)]
        snapshots = [await _next(w) for w in watchers]
        assert snapshots[0] is snapshots[1] is snapshots[2]  # built and encoded once
        assert [t["metadata"]["name"] for t in _decoded(snapshots[0]).topics] == ["t"]
        f.put(make_partition("t", 0, [1]), make_partition("t", 1, [1]))
        pushes = [await _next(w) for w in watchers]
        assert pushes[0] is pushes[1] is pushes[2]
        update = _decoded(pushes[0])
        assert not update.full and update.revision == f.revision
        assert [p["metadata"]["name"] for p in update.partitions] == ["t-0", "t-1"]
        for w in watchers:
            await w.aclose()

    asyncio.run(body())


def test_a_burst_reaches_a_watcher_as_one_update() -> None:
    async def body() -> None:
        f = _Feed()
        updates = f.feed.updates(None)
        await _next(updates)  # the snapshot
        f.put(make_topic("big", 1000))
        for i in range(0, 1000, 10):  # a hundred dispatcher steps while it was busy
            f.put(*(make_partition("big", j, [1]) for j in range(i, i + 10)))
        update = _decoded(await _next(updates))
        assert len(update.topics) == 1 and len(update.partitions) == 1000
        assert update.revision == f.revision
        await updates.aclose()

    asyncio.run(body())


def test_a_watcher_further_along_gets_the_rest_next() -> None:
    async def body() -> None:
        f = _Feed()
        first, second = f.feed.updates(None), f.feed.updates(None)
        await _next(first), await _next(second)
        f.put(make_topic("a"))
        one = await _next(first)  # sent the range holding "a"
        f.put(make_topic("b"))
        shared = await _next(second)  # the same range from the same position
        assert shared is one
        rest = _decoded(await _next(second))
        assert [t["metadata"]["name"] for t in rest.topics] == ["b"]
        assert _decoded(await _next(first)).topics == rest.topics
        await first.aclose(), await second.aclose()

    asyncio.run(body())


def test_a_resync_sends_every_watcher_a_new_snapshot() -> None:
    async def body() -> None:
        f = _Feed()
        updates = f.feed.updates(None)
        await _next(updates)
        f.put(make_topic("a"))
        f.feed.on_changes([], True)
        update = _decoded(await _next(updates))
        assert update.full and [t["metadata"]["name"] for t in update.topics] == ["a"]
        await updates.aclose()

    asyncio.run(body())
