"""Local store: applying KV changes, resyncs, and the snapshot queries controllers use."""

from __future__ import annotations

from typing import Any

from sc.kv.store import ChangeEvent, ChangeType, Resync
from sc.local_store import Change, LocalStore
from spark_stream.models import KvObject, SpuResolution, TopicResolution
from tests.sc.controllers.helpers import make_partition, make_spu, make_topic

A, M, D = ChangeType.ADDED, ChangeType.MODIFIED, ChangeType.DELETED


def _event(kind: ChangeType, obj: KvObject[Any, Any], revision: int) -> ChangeEvent:
    stored = obj.with_revision(revision)
    return ChangeEvent(stored.kind, stored.name, kind, stored, revision)


def test_apply_reports_old_and_new() -> None:
    store = LocalStore()
    spu = make_spu(1)
    added = store.apply(_event(A, spu, 1))
    assert added == Change("Spu", "spu-1", A, None, spu.with_revision(1), 1)
    moved = make_spu(1, rack="r2")
    changed = store.apply(_event(M, moved, 2))
    assert changed is not None
    assert (changed.type, changed.old, changed.new) == (
        M,
        spu.with_revision(1),
        moved.with_revision(2),
    )
    gone = store.apply(_event(D, moved, 3))
    assert gone is not None
    assert (gone.type, gone.old, gone.new) == (D, moved.with_revision(2), None)
    assert gone.object == moved.with_revision(2)
    assert store.spus() == [] and store.revision == 3


def test_stale_and_duplicate_events_are_ignored() -> None:
    store = LocalStore()
    store.apply(_event(A, make_spu(1), 5))
    assert store.apply(_event(M, make_spu(1, rack="old"), 4)) is None
    assert store.apply(_event(M, make_spu(1, rack="dup"), 5)) is None
    assert store.apply(_event(D, make_spu(1), 3)) is None
    assert store.spu(1) == make_spu(1).with_revision(5)


def test_modified_unknown_object_becomes_added_and_unknown_delete_is_dropped() -> None:
    store = LocalStore()
    change = store.apply(_event(M, make_topic("t"), 7))
    assert change is not None and change.type is A and change.old is None
    assert store.apply(_event(D, make_topic("nope"), 8)) is None
    assert store.revision == 8


def test_replace_reports_the_differences() -> None:
    keep, change, drop = make_spu(1), make_spu(2), make_spu(3)
    store = LocalStore.of([keep, change, drop])
    changed = make_spu(2, rack="r9", rev=4)
    new = make_spu(4, rev=4)
    diff = store.apply_resync(Resync(4, {"Spu": (keep, changed, new)}))
    assert [(c.type, c.name) for c in diff] == [(M, "spu-2"), (D, "spu-3"), (A, "spu-4")]
    assert [s.spu_id for s in store.spus()] == [1, 2, 4]
    assert store.revision == 4
    # a resync after the KV store lost data may go back in revisions: the listing wins
    store.replace({"Spu": (keep,)}, 2)
    assert store.revision == 2 and [s.spu_id for s in store.spus()] == [1]


def test_queries() -> None:
    store = LocalStore.of(
        [
            make_spu(3),
            make_spu(1, SpuResolution.OFFLINE),
            make_spu(2),
            make_topic("b", resolution=TopicResolution.PENDING),
            make_topic("a", resolution=TopicResolution.PROVISIONED),
            make_partition("a", 10, [2, 1]),
            make_partition("a", 2, [1, 2]),
            make_partition("ab", 0, [3]),
        ]
    )
    assert [s.spu_id for s in store.spus()] == [1, 2, 3]
    assert store.spu(2) is not None and store.spu(9) is None
    assert store.spu_by_name("spu-3") == store.spu(3)
    assert store.online_spu_ids() == {2, 3}
    assert [t.name for t in store.topics()] == ["a", "b"]
    assert [t.name for t in store.topics_by_resolution(TopicResolution.PENDING)] == ["b"]
    assert [p.index for p in store.partitions_of("a")] == [2, 10]
    assert [p.name for p in store.partitions_of("ab")] == ["ab-0"]
    assert [p.name for p in store.partitions_led_by(1)] == ["a-2"]
    assert store.partition_count() == 3
    store.apply(_event(D, make_partition("a", 2, [1, 2]), 50))
    assert [p.index for p in store.partitions_of("a")] == [10]
    assert store.partition("a-2") is None and store.partition_count() == 2
    assert store.spu_groups() == [] and store.spu_group("x") is None
