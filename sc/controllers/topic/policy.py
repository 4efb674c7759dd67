"""Topic policy: the one-step status transitions of a topic, as pure functions.

``validate`` takes a topic out of ``Init``/``InvalidConfig``; ``provision`` takes it out
of ``Pending``/``InsufficientResources``. Both read the registered SPUs from the store
(any status: a replica on an SPU that is offline right now catches up when it returns).
``missing_spus`` is the create api's check, made before a topic is stored: what those
transitions would stop at for lack of SPUs. ``grow`` provisions the partitions added to
a ``Provisioned`` topic's spec (``ADD_PARTITIONS``): the existing rows stay, the new ones
come from the same computed fill (``compute_assignment(existing=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sc.assignment import (
    Assignment,
    InsufficientSpus,
    InvalidAssignment,
    SpuInfo,
    check_manual_assignment,
    compute_assignment,
    short_of_spus,
    spu_sequence,
)
from sc.local_store import StoreView
from spark_stream.models import (
    Partition,
    PartitionSpec,
    Topic,
    TopicResolution,
    TopicStatus,
)

__all__ = [
    "Provisioning",
    "validate",
    "provision",
    "growing",
    "grow",
    "partitions_for",
    "missing_partitions",
    "missing_spus",
]


@dataclass(frozen=True, slots=True)
class Provisioning:
    """The outcome of a provisioning attempt: the new status and partitions to create."""

    status: TopicStatus
    partitions: tuple[Partition, ...] = ()


def _manual(topic: Topic, store: StoreView) -> Assignment | InvalidAssignment:
    spec = topic.spec
    return check_manual_assignment(
        spec.assignment_map(),
        {spu.spu_id for spu in store.spus()},
        partitions=spec.partitions,
        replication_factor=spec.replication_factor,
    )


def missing_spus(topic: Topic, store: StoreView) -> InsufficientSpus | InvalidAssignment | None:
    """What the registered SPUs lack to hold ``topic`` now; None when they suffice.

    ``InsufficientSpus`` for a replication factor above the number of registered SPUs,
    ``InvalidAssignment`` for a manual assignment naming an SPU that is not registered.
    Either way the controller would leave the topic waiting (``InsufficientResources``,
    ``InvalidConfig``) until SPUs join, so the create api refuses it unless told to
    create it anyway. Cheaper than ``provision``: no replica map is computed.
    """
    if topic.spec.is_manual:
        manual = _manual(topic, store)
        return manual if isinstance(manual, InvalidAssignment) else None
    return short_of_spus(len(store.spus()), topic.spec.replication_factor)


def validate(topic: Topic, store: StoreView) -> TopicStatus:
    """Status after validating partitions and replication settings.

    ``Pending`` when the parameters are valid; ``InvalidConfig`` with the reason
    otherwise (a manual assignment naming unknown SPUs, duplicates, bad counts).
    """
    spec = topic.spec
    if spec.is_manual:
        result = _manual(topic, store)
        if isinstance(result, InvalidAssignment):
            return TopicStatus(resolution=TopicResolution.INVALID_CONFIG, reason=result.reason)
    elif spec.partitions < 1 or spec.replication_factor < 1:  # the model forbids it today
        reason = "partitions and replication factor must be at least 1"
        return TopicStatus(resolution=TopicResolution.INVALID_CONFIG, reason=reason)
    return TopicStatus(resolution=TopicResolution.PENDING)


def provision(topic: Topic, store: StoreView, start_index: int) -> Provisioning:
    """Try to build the replica map and the partitions.

    Returns ``Provisioned`` with the map and one partition per row; or
    ``InsufficientResources`` (too few SPUs) / ``InvalidConfig`` (a manual map that
    stopped matching the SPUs) with the reason and nothing to create.
    """
    spec = topic.spec
    result: Assignment | InsufficientSpus | InvalidAssignment
    if spec.is_manual:
        result = _manual(topic, store)
    else:
        infos = [SpuInfo(spu.spu_id, spu.spec.rack) for spu in store.spus()]
        result = compute_assignment(
            infos,
            spec.partitions,
            spec.replication_factor,
            start_index=start_index,
            ignore_rack=spec.ignore_rack_assignment,
        )
    if isinstance(result, InsufficientSpus):
        status = TopicStatus(
            resolution=TopicResolution.INSUFFICIENT_RESOURCES, reason=result.reason
        )
        return Provisioning(status)
    if isinstance(result, InvalidAssignment):
        status = TopicStatus(resolution=TopicResolution.INVALID_CONFIG, reason=result.reason)
        return Provisioning(status)
    replica_map = result.replica_map()
    status = TopicStatus(resolution=TopicResolution.PROVISIONED, replica_map=replica_map)
    return Provisioning(status, partitions_for(topic, replica_map))


def growing(topic: Topic) -> bool:
    """Whether ``topic`` is provisioned with fewer replica-map rows than its spec asks for."""
    status = topic.status
    return status.resolution is TopicResolution.PROVISIONED and topic.spec.partitions > len(
        status.replica_map
    )


def grow(topic: Topic, store: StoreView, start_index: int) -> Provisioning:
    """Provision the partitions a ``growing`` topic's spec added.

    The replica map keeps its rows and gains one per new partition, computed as at
    creation but seeded with the existing rows' loads. The rotation is the one that
    puts partition 0's leader first (the rotation the topic was created with, so the
    grown map is the map a topic created with the new count would have had, while the
    SPUs are the same); ``start_index`` when that SPU is gone.

    Returns:
        ``Provisioned`` with the longer map and the new partitions; or, when the SPUs
        cannot hold them (fewer than the replication factor now), the topic stays
        ``Provisioned`` with its map and a ``reason``, nothing created (an added SPU or
        the reconcile sweep retries). A manual topic's spec cannot grow (the api refuses
        it), so it gets a reason too.
    """
    spec, status = topic.spec, topic.status
    rows = [status.replica_map[i] for i in sorted(status.replica_map)]
    if spec.is_manual:
        reason = "cannot add partitions: the topic has a manual replica assignment"
        return Provisioning(status.model_copy(update={"reason": reason}))
    infos = [SpuInfo(spu.spu_id, spu.spec.rack) for spu in store.spus()]
    order = spu_sequence(infos, ignore_rack=spec.ignore_rack_assignment)
    first_leader = rows[0][0] if rows and rows[0] else None
    start = order.index(first_leader) if first_leader in order else start_index
    result = compute_assignment(
        infos,
        spec.partitions,
        spec.replication_factor,
        start_index=start,
        ignore_rack=spec.ignore_rack_assignment,
        existing=rows,
    )
    if not isinstance(result, Assignment):
        reason = f"cannot add partitions: {result.reason}"
        return Provisioning(status.model_copy(update={"reason": reason}))
    replica_map = result.replica_map()
    grown = TopicStatus(resolution=TopicResolution.PROVISIONED, replica_map=replica_map)
    added = {i: reps for i, reps in replica_map.items() if i not in status.replica_map}
    return Provisioning(grown, partitions_for(topic, added))


def partitions_for(topic: Topic, replica_map: dict[int, tuple[int, ...]]) -> tuple[Partition, ...]:
    """One partition object per replica-map row, leader first, topic settings copied."""
    return tuple(
        Partition.new(topic.name, index, PartitionSpec.for_replicas(topic.spec, replicas))
        for index, replicas in sorted(replica_map.items())
    )


def missing_partitions(topic: Topic, store: StoreView) -> tuple[Partition, ...]:
    """Partitions a provisioned topic's replica map lists but the store lacks."""
    if topic.status.resolution is not TopicResolution.PROVISIONED:
        return ()
    present = {p.index for p in store.partitions_of(topic.name)}
    wanted = {i: reps for i, reps in topic.status.replica_map.items() if i not in present}
    return partitions_for(topic, wanted)
