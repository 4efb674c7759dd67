"""The KV store contract, run against every backend (memory, real Redis).

CAS conflicts, revision ordering, watch resume, gap -> re-list, parent-child delete,
concurrent writers.
"""

from __future__ import annotations

import asyncio

import pytest

from sc.kv import ChangeEvent, ChangeType, KvStore, Resync
from spark_stream.errors import (
    ConflictError,
    InvalidConfigError,
    NotFoundError,
    ObjectExistsError,
)
from spark_stream.models import (
    KINDS,
    PartitionStatus,
    SpuGroup,
    SpuGroupSpec,
    SpuSpec,
    SpuStatus,
    TopicResolution,
    TopicSpec,
    TopicStatus,
)
from spark_stream.models.partition import PartitionResolution
from spark_stream.models.spu import SpuResolution
from tests.sc.conftest import Backend
from tests.sc.kv.helpers import partition, spu, take, topic


def test_create_get_list(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        assert await store.revision() == 0
        assert await store.get("Topic", "orders") is None
        created = await store.create(topic("orders", 3))
        assert created.revision == 1 and created.spec.partitions == 3
        await store.create(spu(2))
        await store.create(topic("audit"))
        got = await store.get("Topic", "orders")
        assert got == created
        topics, rev = await store.list_objects("Topic")
        assert [t.name for t in topics] == ["audit", "orders"]
        assert rev == 3 == await store.revision()
        by_kind, rev = await store.list_kinds(None)
        assert set(by_kind) == set(KINDS) and rev == 3
        assert [s.spec.spu_id for s in by_kind["Spu"]] == [2]
        assert by_kind["Partition"] == []

    backend.run(body)


def test_create_twice_is_rejected(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await store.create(topic("orders"))
        with pytest.raises(ObjectExistsError, match="orders"):
            await store.create(topic("orders", 5))
        got = await store.get("Topic", "orders")
        assert got is not None and got.spec.partitions == 1
        assert await store.revision() == 1

    backend.run(body)


def test_update_spec_is_compare_and_set(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        first = await store.create(topic("orders"))
        status = TopicStatus(resolution=TopicResolution.PENDING)
        with_status = await store.update_status("Topic", "orders", status, first.revision)
        updated = await store.update_spec(
            "Topic", "orders", TopicSpec(partitions=4), with_status.revision
        )
        assert updated.revision == 3 and updated.spec.partitions == 4
        assert updated.status.resolution is TopicResolution.PENDING  # status kept
        with pytest.raises(ConflictError, match="revision 3, not 1"):
            await store.update_spec("Topic", "orders", TopicSpec(partitions=9), first.revision)
        with pytest.raises(NotFoundError):
            await store.update_spec("Topic", "nope", TopicSpec(), 1)
        assert await store.get("Topic", "orders") == updated

    backend.run(body)


def test_update_status_with_and_without_revision(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await store.create(topic("orders"))
        part = await store.create(partition("orders", 0, leader=5))
        online = PartitionStatus(resolution=PartitionResolution.ONLINE, leader=5, leo=10, hw=9)
        blind = await store.update_status("Partition", "orders-0", online)
        assert blind.status == online and blind.spec == part.spec
        with pytest.raises(ConflictError):
            await store.update_status("Partition", "orders-0", PartitionStatus(), part.revision)
        as_dict = await store.update_status(
            "Partition", "orders-0", {"resolution": "Offline"}, blind.revision
        )
        assert as_dict.status.resolution is PartitionResolution.OFFLINE
        with pytest.raises(NotFoundError):
            await store.update_status("Partition", "orders-1", online)

    backend.run(body)


@pytest.mark.parametrize(
    ("kind", "part", "value", "match"),
    [
        ("Spu", "spec", TopicSpec(), "instance of SpuSpec"),
        ("Topic", "spec", {"partitions": 0}, "partitions"),
        ("Topic", "status", {"resolution": "Bogus"}, "resolution"),
        ("Widget", "spec", {}, "unknown kind"),
    ],
)
def test_invalid_writes_are_typed_errors(
    backend: Backend, kind: str, part: str, value: object, match: str
) -> None:
    async def body(store: KvStore) -> None:
        await store.create(spu(1))
        await store.create(topic("orders"))
        with pytest.raises(InvalidConfigError, match=match):
            if part == "spec":
                await store.update_spec(kind, "orders", value, 1)
            else:
                await store.update_status(kind, "orders", value)
        assert await store.revision() == 2

    backend.run(body)


def test_delete(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        created = await store.create(spu(1))
        with pytest.raises(ConflictError):
            await store.delete("Spu", "spu-1", created.revision + 7)
        gone = await store.delete("Spu", "spu-1", created.revision)
        assert gone == created
        assert await store.get("Spu", "spu-1") is None
        with pytest.raises(NotFoundError):
            await store.delete("Spu", "spu-1")
        again = await store.create(spu(1))
        assert again.revision == 3

    backend.run(body)


def test_create_gives_a_uid_that_writes_keep_and_a_recreate_changes(backend: Backend) -> None:
    """The uid tells a topic's partitions from those of a deleted topic of the same name."""

    async def body(store: KvStore) -> None:
        await store.create(topic("orders"))
        first = await store.create(partition("orders", 0, leader=5).with_uid("from-caller"))
        assert first.uid is not None and first.uid != "from-caller"  # the store decides
        written = await store.update_status("Partition", "orders-0", PartitionStatus())
        listed, _ = await store.list_objects("Partition")
        feed = await take(store.watch("Partition", 0), 2)
        assert written.uid == first.uid and [p.uid for p in listed] == [first.uid]
        assert [e.object.uid for e in feed if isinstance(e, ChangeEvent)] == [first.uid] * 2
        await store.delete("Topic", "orders")
        await store.create(topic("orders"))
        again = await store.create(partition("orders", 0, leader=5))
        assert again.uid is not None and again.uid != first.uid
        got = await store.get("Partition", "orders-0")
        assert got is not None and got.uid == again.uid

    backend.run(body)


def test_keep_uid_store_id_and_tombstones(backend: Backend) -> None:
    """What a rebuild needs (``sc.rebuild``): a create that keeps the uid the SPUs' storage
    names, a stable store identity, and the uids of deleted partitions."""

    async def body(store: KvStore) -> None:
        await store.create(topic("orders"))
        kept = await store.create(partition("orders", 0).with_uid("from-spu"), keep_uid=True)
        got = await store.get("Partition", "orders-0")
        assert kept.uid == "from-spu" and got is not None and got.uid == "from-spu"
        no_uid = await store.create(partition("orders", 1), keep_uid=True)
        assert no_uid.uid  # none given: a new one
        first = await store.store_id()
        assert first and await store.store_id() == first
        assert await store.tombstones() == frozenset()
        await store.add_tombstones(["u1", "u2"])
        await store.add_tombstones(["u2", "u3"])
        await store.add_tombstones([])
        assert await store.tombstones() == {"u1", "u2", "u3"}

    backend.run(body)


def test_watch_replays_in_revision_order(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        a = await store.create(topic("a"))
        s = await store.create(spu(1))
        await store.update_status("Spu", "spu-1", SpuStatus(resolution=SpuResolution.ONLINE))
        await store.update_spec("Topic", "a", TopicSpec(partitions=2), a.revision)
        await store.delete("Spu", "spu-1")
        events = await take(store.watch(None, 0), 5)
        assert [e.revision for e in events] == [1, 2, 3, 4, 5]
        assert [(e.kind, e.name, e.type) for e in events] == [
            ("Topic", "a", ChangeType.ADDED),
            ("Spu", "spu-1", ChangeType.ADDED),
            ("Spu", "spu-1", ChangeType.MODIFIED),
            ("Topic", "a", ChangeType.MODIFIED),
            ("Spu", "spu-1", ChangeType.DELETED),
        ]
        assert events[0].object == a and events[1].object == s
        assert events[2].object.status.is_online and events[2].object.revision == 3
        assert events[3].object.spec.partitions == 2
        deleted = events[4].object  # the last stored state, at its last revision
        assert deleted.status.is_online and deleted.revision == 3

    backend.run(body)


def test_watch_resumes_from_a_listing(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await store.create(topic("a"))
        await store.create(spu(1))
        topics, rev = await store.list_objects("Topic")
        assert [t.name for t in topics] == ["a"]
        await store.create(spu(2))  # another kind: filtered out
        await store.create(topic("b"))
        watch = store.watch("Topic", rev)
        [event] = await take(watch, 1)
        assert (event.name, event.type, event.revision) == ("b", ChangeType.ADDED, 4)
        # The watch now waits; a later write arrives without polling by the test.
        pending = asyncio.ensure_future(take(watch, 1))
        await asyncio.sleep(0)
        await store.create(spu(3))
        written = await store.create(topic("c"))
        [later] = await pending
        assert later.object == written and later.revision == 6

    backend.run(body)


def test_watch_several_kinds(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await store.create(topic("a"))
        await store.create(SpuGroup.new("g", SpuGroupSpec(replicas=1)))
        await store.create(spu(1))
        events = await take(store.watch(["Spu", "Topic"], 0), 2)
        assert [e.kind for e in events] == ["Topic", "Spu"]
        with pytest.raises(InvalidConfigError, match="unknown kind"):
            store.watch("Gizmo", 0)

    backend.run(body)


def test_gap_triggers_resync_with_full_listing(backend: Backend) -> None:
    # Redis trims the stream approximately (whole 100-entry nodes): write well past it.
    writes = 350

    async def body(store: KvStore) -> None:
        await store.create(topic("keep", 2))
        await store.create(spu(1))
        for _ in range(writes):
            await store.update_status("Spu", "spu-1", SpuStatus())
        await store.create(topic("late"))
        current = await store.revision()
        assert current == writes + 3
        watch = store.watch("Topic", 1)
        [first] = await take(watch, 1)
        assert isinstance(first, Resync)
        assert first.revision == current
        assert set(first.objects) == {"Topic"}
        assert [t.name for t in first.objects["Topic"]] == ["keep", "late"]
        # The watch carries on from the listing's revision.
        pending = asyncio.ensure_future(take(watch, 1))
        await asyncio.sleep(0)
        await store.create(topic("next"))
        [after] = await pending
        assert isinstance(after, ChangeEvent) and after.revision == current + 1

    backend.run(body, retention=10)


def test_watch_from_the_future_resyncs(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await store.create(topic("a"))
        [event] = await take(store.watch(None, 50), 1)
        assert isinstance(event, Resync) and event.revision == 1
        assert set(event.objects) == set(KINDS)
        assert [t.name for t in event.objects["Topic"]] == ["a"]
        with pytest.raises(ValueError):
            store.watch(None, -1)

    backend.run(body)


def test_deleting_a_topic_deletes_its_partitions(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        with pytest.raises(NotFoundError, match="parent"):
            await store.create(partition("orders", 0))
        await store.create(topic("orders", 3))
        await store.create(topic("other"))
        for i in range(3):
            await store.create(partition("orders", i))
        await store.create(partition("other", 0))
        await store.delete("Partition", "orders-1")  # a child deleted on its own first
        start = await store.revision()
        gone = await store.delete("Topic", "orders")
        assert gone.name == "orders"
        parts, rev = await store.list_objects("Partition")
        assert [p.name for p in parts] == ["other-0"]
        assert rev == start + 3
        events = await take(store.watch(None, start), 3)
        assert [(e.kind, e.name, e.type) for e in events] == [
            ("Partition", "orders-0", ChangeType.DELETED),
            ("Partition", "orders-2", ChangeType.DELETED),
            ("Topic", "orders", ChangeType.DELETED),
        ]
        assert [e.revision for e in events] == [start + 1, start + 2, start + 3]
        # A re-created topic starts with no children.
        await store.create(topic("orders"))
        await store.create(partition("orders", 0))
        await store.delete("Topic", "orders")
        assert [p.name for p in (await store.list_objects("Partition"))[0]] == ["other-0"]

    backend.run(body)


def test_concurrent_writers_lose_cas_but_lose_no_update(backend: Backend) -> None:
    writers, increments = 4, 15

    async def bump(store: KvStore) -> int:
        conflicts = 0
        for _ in range(increments):
            while True:
                current = await store.get("SpuGroup", "g")
                assert current is not None
                await asyncio.sleep(0)  # let the other writers interleave
                spec = current.spec.model_copy(update={"replicas": current.spec.replicas + 1})
                try:
                    await store.update_spec("SpuGroup", "g", spec, current.revision)
                    break
                except ConflictError:
                    conflicts += 1
        return conflicts

    async def body(store: KvStore) -> None:
        # Redis writers get their own client each; memory writers share the one store.
        stores = (
            [store] if backend.name == "memory" else [backend.make(100) for _ in range(writers)]
        )
        try:
            await store.create(SpuGroup.new("g", SpuGroupSpec(replicas=0)))
            conflicts = await asyncio.gather(
                *(bump(stores[i % len(stores)]) for i in range(writers))
            )
        finally:
            for other in stores:
                if other is not store:
                    await other.close()
        final = await store.get("SpuGroup", "g")
        assert final is not None and final.spec.replicas == writers * increments
        assert final.revision == 1 + writers * increments == await store.revision()
        assert sum(conflicts) > 0

    backend.run(body)


def test_spec_types_are_checked_before_writing(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        created = await store.create(spu(1))
        with pytest.raises(InvalidConfigError):
            await store.update_spec("Spu", "spu-1", {"spuId": -4}, created.revision)
        updated = await store.update_spec("Spu", "spu-1", SpuSpec(spu_id=9), created.revision)
        assert updated.spu_id == 9

    backend.run(body)


def test_close_ends_a_blocked_watch(backend: Backend) -> None:
    async def body(store: KvStore) -> None:
        await store.create(topic("a"))
        watch = store.watch("Topic", 1)
        pending = asyncio.ensure_future(take(watch, 1))
        await asyncio.sleep(0)
        await store.close()
        assert await pending == []

    backend.run(body)
