"""The Partition object: one replica set of a topic, named ``{topic}-{index}``.

Spec (written by the SC, seed ``003``)::

    spec:
      initialLeader: 101
      replicas: [101, 102]

plus the topic's log settings (retention, segment size, compression, min in-sync
replicas, unclean election), copied so an SPU needs nothing but the partition.
Status (written by the SPU leader): ``resolution``, ``leader``, ``leaderEpoch``, ``lrs``
(live replica status: SPU id, LEO and HW per replica), the leader's ``leo``/``hw``,
``logStartOffset`` and ``reason``. The seed's short form ``lrs: [101, 102]`` is accepted.

``leaderEpoch`` counts the partition's leader elections: 0 for a new partition, bumped
by the SC's partition controller each time it picks a leader (``with_leader``), never
by the leader's own reports. It is stored with the status, so it only grows, across SC
restarts too; SPUs get it with the replica and fetches may carry it (KIP-320).

A partition's ``metadata.parent`` is its topic, filled in from the name when absent, so
the KV store deletes the partitions together with the topic.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Self

from pydantic import Field, field_validator, model_validator

from spark_stream.models._base import (
    CaseInsensitiveEnum,
    FrozenModel,
    KvObject,
    Metadata,
    ObjectRef,
    check_name,
)
from spark_stream.models.spu import MAX_SPU_ID
from spark_stream.models.topic import MAX_PARTITIONS, MAX_TOPIC_NAME, TopicSettings, TopicSpec

__all__ = [
    "PartitionSpec",
    "PartitionResolution",
    "ReplicaStatus",
    "PartitionStatus",
    "Partition",
    "partition_name",
    "parse_partition_name",
]

_PARTITION_NAME = re.compile(r"^(?P<topic>.+)-(?P<index>0|[1-9][0-9]*)$")


def partition_name(topic: str, index: int) -> str:
    """The name of partition ``index`` of ``topic``: ``"{topic}-{index}"``."""
    return f"{topic}-{index}"


def parse_partition_name(name: str) -> tuple[str, int]:
    """Split ``"{topic}-{index}"`` into ``(topic, index)``.

    Raises:
        ValueError: the name is not a valid topic name followed by ``-{index}``.
    """
    match = _PARTITION_NAME.match(name)
    if match is None:
        raise ValueError(f"partition name {name!r} must be '{{topic}}-{{index}}'")
    topic, index = match.group("topic"), int(match.group("index"))
    check_name(topic, MAX_TOPIC_NAME)
    if index >= MAX_PARTITIONS:
        raise ValueError(f"partition index {index} is not below {MAX_PARTITIONS}")
    return topic, index


class PartitionSpec(TopicSettings):
    """Desired state of a partition: its replicas (leader first) and the topic settings."""

    initial_leader: int = Field(ge=0, le=MAX_SPU_ID)
    replicas: tuple[int, ...] = Field(min_length=1)

    @field_validator("replicas")
    @classmethod
    def _distinct(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if len(set(value)) != len(value):
            raise ValueError(f"replicas {list(value)} must be distinct SPUs")
        if any(spu < 0 or spu > MAX_SPU_ID for spu in value):
            raise ValueError(f"replicas: SPU ids must be in 0..{MAX_SPU_ID}")
        return value

    @model_validator(mode="after")
    def _leader_is_replica(self) -> Self:
        if self.initial_leader not in self.replicas:
            raise ValueError(
                f"initialLeader {self.initial_leader} is not in replicas {list(self.replicas)}"
            )
        return self

    @classmethod
    def for_replicas(cls, topic: TopicSpec, replicas: tuple[int, ...] | list[int]) -> Self:
        """Spec for one row of a replica map: first replica leads, topic settings copied."""
        reps = tuple(replicas)
        if not reps:
            raise ValueError("replicas: a partition needs at least one replica")
        return cls(initial_leader=reps[0], replicas=reps, **topic.settings())

    @property
    def followers(self) -> tuple[int, ...]:
        """The replicas other than the initial leader."""
        return tuple(spu for spu in self.replicas if spu != self.initial_leader)


class PartitionResolution(CaseInsensitiveEnum):
    """State of a partition's replica set.

    ``Init`` until the leader reports; ``Online`` with a live leader; ``Offline`` when
    no eligible leader exists; ``LeaderOffline`` between losing the leader and the
    election's outcome.
    """

    INIT = "Init"
    ONLINE = "Online"
    OFFLINE = "Offline"
    LEADER_OFFLINE = "LeaderOffline"


class ReplicaStatus(FrozenModel):
    """One live replica as the leader reports it; -1 means "not known yet".

    ``damaged``: the replica holds a frame that failed its crc on disk (found by the
    scrub or a read) and is not repaired yet; it is out of sync and never elected.
    ``repair``: what happened to it, for people (``damaged: crc mismatch ...``,
    ``repairing from offset 120``, ``repaired from offset 120``); None when nothing did.
    """

    spu_id: int = Field(ge=0, le=MAX_SPU_ID)
    leo: int = Field(default=-1, ge=-1)
    hw: int = Field(default=-1, ge=-1)
    in_sync: bool = True
    damaged: bool = False
    repair: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_id(cls, data: Any) -> Any:
        # The seed writes `lrs: [101, 102]`: a bare SPU id is a replica of unknown state.
        if isinstance(data, int) and not isinstance(data, bool):
            return {"spuId": data}
        return data


class PartitionStatus(FrozenModel):
    """Observed state of a partition, written by its leader SPU (and the SC on election).

    ``log_start_offset`` and ``size`` (bytes of the leader's log) are -1 until the
    leader first reports.
    """

    resolution: PartitionResolution = PartitionResolution.INIT
    leader: int | None = Field(default=None, ge=0, le=MAX_SPU_ID)
    leader_epoch: int = Field(default=0, ge=0)
    lrs: tuple[ReplicaStatus, ...] = ()
    leo: int = Field(default=-1, ge=-1)
    hw: int = Field(default=-1, ge=-1)
    log_start_offset: int = Field(default=-1, ge=-1)
    size: int = Field(default=-1, ge=-1)
    reason: str | None = None
    #: The leader's tiering state (``ok: 3 files [0, 4500)``, ``error: ...``); None:
    #: the topic has no tier, or the leader did not report yet.
    tier: str | None = None

    def replica(self, spu_id: int) -> ReplicaStatus | None:
        """The live status of ``spu_id``'s replica, if the leader reported it."""
        for rep in self.lrs:
            if rep.spu_id == spu_id:
                return rep
        return None


class Partition(KvObject[PartitionSpec, PartitionStatus]):
    """A partition object (kind ``Partition``), a child of its topic."""

    kind: ClassVar[str] = "Partition"

    status: PartitionStatus = PartitionStatus()

    @model_validator(mode="before")
    @classmethod
    def _parent_from_name(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        meta = data.get("metadata")
        name: object
        if isinstance(meta, Metadata):
            if meta.parent is not None:
                return data
            name = meta.name
        elif isinstance(meta, dict) and meta.get("parent") is None:
            name = meta.get("name")
        else:
            return data
        if not isinstance(name, str):
            return data
        try:
            topic, _ = parse_partition_name(name)
        except ValueError:
            return data  # the after-validator reports the bad name
        parent = {"kind": "Topic", "name": topic}
        if isinstance(meta, Metadata):
            meta = meta.model_copy(update={"parent": ObjectRef(kind="Topic", name=topic)})
        else:
            meta = {**meta, "parent": parent}
        return {**data, "metadata": meta}

    @model_validator(mode="after")
    def _name_matches_parent(self) -> Self:
        topic, _ = parse_partition_name(self.metadata.name)
        parent = self.metadata.parent
        if parent is None or parent.kind != "Topic" or parent.name != topic:
            raise ValueError(f"metadata.parent must be Topic {topic!r}, got {parent}")
        return self

    @classmethod
    def new(
        cls,
        topic: str,
        index: int,
        spec: PartitionSpec,
        status: PartitionStatus | None = None,
    ) -> Partition:
        """Build partition ``index`` of ``topic`` with revision 0 and its parent set."""
        parent = ObjectRef(kind="Topic", name=topic)
        return cls.build(partition_name(topic, index), spec, status, parent=parent)

    @property
    def topic(self) -> str:
        """The topic this partition belongs to."""
        return parse_partition_name(self.metadata.name)[0]

    @property
    def index(self) -> int:
        """The partition's index within its topic."""
        return parse_partition_name(self.metadata.name)[1]
