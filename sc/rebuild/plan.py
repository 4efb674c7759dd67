"""Rebuilding a forgotten store from what an SPU reports: pure planning, no I/O.

Theory of operation. Every SPU keeps, next to each replica it holds, the replica as the SC
last handed it over and the identity of the store it came from (``ReplicaMeta``, kept by
``spu.storage.replica_meta``); it reports them on every connect. A record is
**forgotten** by the store when it names another store (the data was lost: flushed, a
new empty server) or a partition revision the store has not reached (the store went
back in time: restored from an older file). For the forgotten records of one report,
``plan_rebuild`` returns what to write so the store knows them again:

- the reporting SPU's registration (a custom SPU at the endpoints it bound) when the
  store does not know its id and no SPU group manages it: it must be accepted to serve
  its data. A managed SPU comes back with its group (``fluvio cluster start`` creates
  it again; the provisioner adopts the running process);
- each topic the store lacks, rebuilt from its partitions' records: the topic settings
  they carry, ``partitions`` = the number of partitions reported, the replication
  factor of the newest record, status ``Provisioned`` with the reported replica sets as
  its map (as many rows as ``partitions``, so the topic controller assigns nothing anew;
  a partition reported later by another SPU is a growth, below);
- each partition the store lacks, with the reported uid (the SPUs' storage is named by
  it), replica set and settings, and the newest leader and leader epoch reported;
- for a topic the store has whose map lacks a reported index: the partition, then the
  map row, then ``partitions`` raised (``TopicGrowth``), in that order, so the topic
  controller never sees a spec above its map and assigns that row anew;
- for a partition the store has with the record's uid but an older leader epoch (built
  from another SPU's older record): the newest epoch and its leader (``EpochRaise``).

A forgotten record whose uid the store lists as deleted (``tombstones``: an SPU away
while a rebuilt topic was deleted again still names the old store) is not rebuilt: it
is purged as deleted.

Among several records of one partition the newest wins: highest leader epoch, then
highest partition revision (``newest``). A record the store has not forgotten is left
to the usual rules (purged when its partition was deleted), and a partition or topic the
store has with another uid is the store's (an admin created it anew): never replaced.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from sc.local_store import StoreView
from spark_stream.models import (
    Partition,
    PartitionResolution,
    PartitionStatus,
    PrivateEndpoint,
    PublicEndpoint,
    Spu,
    SpuType,
    Topic,
    TopicResolution,
    TopicSettings,
    TopicSpec,
    TopicStatus,
)
from spark_stream.protocol.control import Replica, ReplicaMeta

__all__ = ["EpochRaise", "RebuildPlan", "TopicGrowth", "forgotten", "newest", "plan_rebuild"]


@dataclass(frozen=True, slots=True)
class TopicGrowth:
    """A known topic gains map rows (and ``partitions``) for reported partitions."""

    topic: str
    rows: Mapping[int, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class EpochRaise:
    """A known partition takes a newer leader epoch (and its leader) than it holds."""

    partition: str
    leader: int | None
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class RebuildPlan:
    """What to write, in this order: SPU, topics, partitions, growths, epoch raises."""

    spu: Spu | None = None
    topics: tuple[Topic, ...] = ()
    partitions: tuple[Partition, ...] = ()
    growths: tuple[TopicGrowth, ...] = ()
    raises: tuple[EpochRaise, ...] = ()
    forgotten: tuple[str, ...] = field(default=())
    """Names of the reported partitions the store had forgotten (for the log)."""

    @property
    def empty(self) -> bool:
        """True when there is nothing to write."""
        return not (self.spu or self.topics or self.partitions or self.growths or self.raises)


def forgotten(meta: ReplicaMeta, store_id: str, revision: int) -> bool:
    """True when the store forgot ``meta``: another store's, or a revision not reached."""
    if not meta.store_id:
        return False  # kept before its SPU learned any store: nothing to compare
    return meta.store_id != store_id or meta.replica.revision > revision


def newest(records: Iterable[ReplicaMeta]) -> dict[str, ReplicaMeta]:
    """The newest record of each partition: highest leader epoch, then revision."""
    best: dict[str, ReplicaMeta] = {}
    for meta in records:
        held = best.get(meta.replica.name)
        if held is None or _age(meta) > _age(held):
            best[meta.replica.name] = meta
    return best


def _age(meta: ReplicaMeta) -> tuple[int, int]:
    return meta.replica.leader_epoch, meta.replica.revision


def plan_rebuild(
    store: StoreView,
    store_id: str,
    records: Iterable[ReplicaMeta],
    *,
    spu_id: int,
    public: PublicEndpoint | None = None,
    private: PrivateEndpoint | None = None,
    group: str | None = None,
    tombstones: Collection[str] = frozenset(),
) -> RebuildPlan:
    """What to write so ``store`` knows again what SPU ``spu_id`` reports it forgot.

    Args:
        store: the SC's mirror of the store.
        store_id: the store's identity (``KvStore.store_id``).
        records: the SPU's report (``SpuConnectRequest.replica_meta``).
        spu_id: the reporting SPU.
        public: the public endpoint it bound (for its registration).
        private: the private endpoint it bound.
        group: the SPU group managing it (``SpuConnectRequest.group``); None: custom.
        tombstones: uids of partitions deleted from this store (``KvStore.tombstones``):
            a record of an older store with such a uid was deleted after the rebuild.
    """
    lost = {
        name: meta
        for name, meta in newest(records).items()
        if forgotten(meta, store_id, store.revision) and meta.replica.uid not in tombstones
    }
    if not lost:
        return RebuildPlan()
    spu = None
    if store.spu(spu_id) is None and group is None:
        spec = {
            "spu_id": spu_id,
            "spu_type": SpuType.CUSTOM,
            "public_endpoint": public or PublicEndpoint(),
            "private_endpoint": private or PrivateEndpoint(),
        }
        spu = Spu.build(f"custom-spu-{spu_id}", spec)
    by_topic: dict[str, list[Replica]] = {}
    for meta in lost.values():
        by_topic.setdefault(meta.replica.topic, []).append(meta.replica)
    topics: list[Topic] = []
    partitions: list[Partition] = []
    growths: list[TopicGrowth] = []
    raises: list[EpochRaise] = []
    for name in sorted(by_topic):
        replicas = sorted(by_topic[name], key=lambda r: r.partition)
        known = store.topic(name)
        missing = [r for r in replicas if store.partition(r.name) is None]
        if known is None:
            topics.append(_topic(name, replicas))
        elif missing:
            rows = {r.partition: r.replicas for r in missing}
            if set(rows) - set(known.status.replica_map):
                growths.append(TopicGrowth(name, rows))
        partitions += [_partition(r) for r in missing]
        for replica in replicas:
            held = store.partition(replica.name)
            if held is None or held.uid != replica.uid:
                continue  # missing (created above), or another incarnation: the store's
            if replica.leader_epoch > held.status.leader_epoch:
                raises.append(EpochRaise(replica.name, replica.leader, replica.leader_epoch))
    return RebuildPlan(
        spu, tuple(topics), tuple(partitions), tuple(growths), tuple(raises), tuple(sorted(lost))
    )


def _topic(name: str, replicas: list[Replica]) -> Topic:
    """A topic rebuilt from its partitions' records (sorted by index)."""
    latest = max(replicas, key=lambda r: (r.leader_epoch, r.revision))
    settings = {key: getattr(latest.spec, key) for key in TopicSettings.model_fields}
    spec = TopicSpec(
        partitions=len(replicas),  # = its map's rows: the controller grows nothing
        replication_factor=len(latest.replicas),
        **settings,
    )
    status = TopicStatus(
        resolution=TopicResolution.PROVISIONED,
        replica_map={r.partition: r.replicas for r in replicas},
    )
    return Topic.build(name, spec, status)


def _partition(replica: Replica) -> Partition:
    """A partition rebuilt from its newest record, keeping the uid its storage names."""
    status = PartitionStatus(
        resolution=PartitionResolution.ONLINE
        if replica.leader is not None
        else PartitionResolution.OFFLINE,
        leader=replica.leader,
        leader_epoch=replica.leader_epoch,
    )
    partition = Partition.build(replica.name, replica.spec, status)
    return partition.with_uid(replica.uid) if replica.uid else partition
