"""The client's metadata view: applying watch pushes and answering leader lookups."""

from __future__ import annotations

from spark_stream.client.metadata import Leader, MetadataView
from spark_stream.models import (
    IngressAddr,
    Partition,
    PartitionSpec,
    PartitionStatus,
    PublicEndpoint,
    Spu,
    SpuSpec,
    SpuStatus,
    Topic,
    TopicSpec,
)
from spark_stream.protocol.control import MetadataUpdate


def spu(spu_id: int, port: int, online: bool = True) -> Spu:
    ep = PublicEndpoint(port=port, ingress=(IngressAddr(hostname="127.0.0.1"),))
    status = SpuStatus(resolution="Online" if online else "Offline")
    return Spu.new(f"spu-{spu_id}", SpuSpec(spu_id=spu_id, public_endpoint=ep), status)


def partition(
    topic: str,
    index: int,
    replicas: tuple[int, ...],
    leader: int | None,
    resolution: str = "Online",
) -> Partition:
    spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas)
    status = PartitionStatus(resolution=resolution, leader=leader, hw=3, leo=4)
    return Partition.new(topic, index, spec, status)


def update(
    full: bool,
    revision: int,
    *,
    spus: tuple[Spu, ...] | list[Spu] = (),
    topics: tuple[Topic, ...] | list[Topic] = (),
    parts: tuple[Partition, ...] | list[Partition] = (),
    deleted: tuple[dict[str, str], ...] | list[dict[str, str]] = (),
) -> MetadataUpdate:
    return MetadataUpdate(
        full,
        revision,
        [s.to_dict() for s in spus],
        [t.to_dict() for t in topics],
        [p.to_dict() for p in parts],
        list(deleted),
    )


def base_view() -> MetadataView:
    view = MetadataView()
    view.apply(
        update(
            True,
            5,
            spus=[spu(1, 9101), spu(2, 9102)],
            topics=[Topic.new("orders", TopicSpec(partitions=2, replication_factor=2))],
            parts=[partition("orders", 0, (1, 2), 1), partition("orders", 1, (2, 1), 2)],
        )
    )
    return view


def test_full_snapshot_gives_leaders_and_partition_infos() -> None:
    view = base_view()
    assert view.revision == 5
    assert view.partition_count("orders") == 2
    assert view.leader("orders", 0) == Leader(1, "127.0.0.1", 9101)
    infos = view.topic_partitions("orders")
    assert [(i.partition, i.leader, i.replicas, i.leader_endpoint) for i in infos] == [
        (0, 1, (1, 2), "127.0.0.1:9101"),
        (1, 2, (2, 1), "127.0.0.1:9102"),
    ]
    assert infos[0].hw == 3 and infos[0].leo == 4


def test_incremental_update_moves_a_leader() -> None:
    view = base_view()
    view.apply(update(False, 6, parts=[partition("orders", 0, (1, 2), 2)]))
    assert view.leader("orders", 0) == Leader(2, "127.0.0.1", 9102)
    assert view.revision == 6


def test_offline_leader_spu_is_no_leader() -> None:
    view = base_view()
    view.apply(update(False, 7, spus=[spu(1, 9101, online=False)]))
    assert view.leader("orders", 0) is None
    assert view.leader("orders", 1) is not None


def test_init_partition_uses_the_initial_leader() -> None:
    view = base_view()
    view.apply(update(False, 8, parts=[partition("orders", 1, (2, 1), None, "Init")]))
    assert view.leader("orders", 1) == Leader(2, "127.0.0.1", 9102)


def test_deleting_a_topic_drops_its_partitions() -> None:
    view = base_view()
    view.apply(update(False, 9, deleted=[{"kind": "Topic", "name": "orders"}]))
    assert view.partition_count("orders") is None
    assert view.topic_partitions("orders") == []
    assert view.leader("orders", 0) is None


def test_full_snapshot_replaces_everything() -> None:
    view = base_view()
    view.apply(update(True, 10, spus=[spu(3, 9103)]))
    assert view.partition_count("orders") is None
    assert view.spu(3) is not None and view.spu(1) is None
