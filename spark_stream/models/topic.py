"""The Topic object: a stream's partitioning, replication and log settings.

Spec (seed ``003``)::

    spec:
      partitions: 6
      replicationFactor: 3

or a manual assignment, where partitions and replication factor follow from the list::

    spec:
      replicaAssignment:
        - {partition: 0, replicas: [0, 1, 2]}
        - {partition: 1, replicas: [1, 2, 0]}

Status ``resolution`` moves ``Init`` -> ``Pending`` -> ``Provisioned`` (or
``InsufficientResources`` / ``InvalidConfig`` with a ``reason``); ``replicaMap`` maps
each partition index to its SPUs, leader first. The seed's list form
``[{0: [0, 1, 2]}, ...]`` is accepted on input; output is a plain mapping.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from spark_stream.errors import InvalidConfigError
from spark_stream.models._base import (
    CaseInsensitiveEnum,
    FrozenModel,
    KvObject,
    Metadata,
    check_name,
)
from spark_stream.models.topic_schema import TopicSchema
from spark_stream.models.topic_table import TableFormat, check_delta_types

__all__ = [
    "Compression",
    "TableFormat",
    "TopicSettings",
    "PartitionAssignment",
    "TopicSpec",
    "TopicResolution",
    "TopicStatus",
    "Topic",
    "MAX_PARTITIONS",
    "MAX_TOPIC_NAME",
    "MIN_SEGMENT_SIZE",
    "MAX_SEGMENT_SIZE",
]

#: Upper bound on partitions per topic, so a typo cannot make the SC create millions.
MAX_PARTITIONS = 100_000
#: Smallest segment size a topic may ask for. A one-record batch frame is about 600
#: bytes, so below this every batch gets a segment of its own anyway: smaller sizes
#: would only add files.
MIN_SEGMENT_SIZE = 1024
#: Largest segment size: batch positions in a segment's offset index are 32-bit
#: (``spu.storage`` enforces the same bound).
MAX_SEGMENT_SIZE = (1 << 31) - 1
#: Topic names are DNS labels (63 characters); partition names append ``-{index}``.
MAX_TOPIC_NAME = 63


class Compression(CaseInsensitiveEnum):
    """Arrow IPC buffer compression a topic accepts (``any``: the producer chooses)."""

    ANY = "any"
    NONE = "none"
    LZ4 = "lz4"
    ZSTD = "zstd"


class TopicSettings(FrozenModel):
    """Log and replication settings a topic hands down to each of its partitions.

    ``None`` means "the SPU's configured default".

    With a ``tier`` (an fsspec URL: the topic's tier directory, see
    ``spark_stream.tier``), each partition's leader copies sealed segments there as
    Parquet; ``retention_secs`` is then how long the tier keeps history, and
    ``local_retention_secs`` how long segments stay on the SPUs' disks (default: as long
    as the tier keeps them), never deleted there before their tier copy is recorded.
    """

    retention_secs: int | None = Field(default=None, ge=1)
    local_retention_secs: int | None = Field(default=None, ge=1)
    tier: str | None = Field(default=None, min_length=1, max_length=4096)
    max_partition_size: int | None = Field(default=None, ge=1)
    segment_size: int | None = None
    compression: Compression = Compression.ANY
    min_in_sync_replicas: int = Field(default=1, ge=1)
    unclean_leader_election: bool = False
    #: The user columns of a typed topic, with their version; None: untyped records.
    topic_schema: TopicSchema | None = None
    #: ``delta``: every tiered file is also committed to a Delta table at the tier's root.
    table: TableFormat | None = None

    @field_validator("segment_size")
    @classmethod
    def _segment_size_in_range(cls, value: int | None) -> int | None:
        # Refused, not clamped: the SPU rolls segments at exactly this size.
        if value is not None and not MIN_SEGMENT_SIZE <= value <= MAX_SEGMENT_SIZE:
            raise ValueError(
                f"{value} bytes is outside the segment sizes an SPU supports, "
                f"{MIN_SEGMENT_SIZE} (1Ki) to {MAX_SEGMENT_SIZE} bytes (2Gi - 1)"
            )
        return value

    @field_validator("tier")
    @classmethod
    def _tier_url(cls, value: str | None) -> str | None:
        if value is not None and (value != value.strip() or "\n" in value):
            raise ValueError(f"tier {value!r} must be a URL or a path without surrounding space")
        return value

    @model_validator(mode="after")
    def _table_types(self) -> Self:
        # A Delta table must hold every column as it is (see topic_table).
        if self.table is TableFormat.DELTA and self.topic_schema is not None:
            try:
                check_delta_types(self.topic_schema.arrow_schema)
            except InvalidConfigError as exc:
                raise ValueError(str(exc)) from None
        return self

    def settings(self) -> dict[str, Any]:
        """Return the settings fields alone (snake_case), to copy into a partition spec."""
        return {name: getattr(self, name) for name in TopicSettings.model_fields}

    @model_serializer(mode="wrap")
    def _settings_last(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Subclass fields (partitions, replicas...) read first, as in the seed's YAML.
        data = handler(self)
        if not isinstance(data, dict):
            return data
        first = {k: v for k, v in data.items() if k not in _SETTING_KEYS}
        return first | {k: v for k, v in data.items() if k in _SETTING_KEYS}


_SETTING_KEYS = frozenset(
    key for name, info in TopicSettings.model_fields.items() for key in (name, info.alias)
)


class PartitionAssignment(FrozenModel):
    """One row of a manual replica assignment: a partition and its SPUs, leader first."""

    partition: int = Field(ge=0)
    replicas: tuple[int, ...] = Field(min_length=1)

    @field_validator("replicas")
    @classmethod
    def _distinct(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if len(set(value)) != len(value):
            raise ValueError(f"replicas {list(value)} must be distinct SPUs")
        if any(spu < 0 for spu in value):
            raise ValueError("replicas: SPU ids must be >= 0")
        return value


class TopicSpec(TopicSettings):
    """Desired state of a topic: computed (partitions x factor) or manually assigned."""

    partitions: int = Field(default=1, ge=1, le=MAX_PARTITIONS)
    replication_factor: int = Field(default=1, ge=1)
    ignore_rack_assignment: bool = False
    replica_assignment: tuple[PartitionAssignment, ...] | None = None

    @model_validator(mode="before")
    @classmethod
    def _counts_from_assignment(cls, data: Any) -> Any:
        # With a manual assignment, partitions and factor default to what it implies.
        if not isinstance(data, dict):
            return data
        rows = data.get("replicaAssignment", data.get("replica_assignment"))
        if not isinstance(rows, list | tuple) or not rows:
            return data
        first = rows[0]
        replicas = first.get("replicas") if isinstance(first, dict) else None
        data = dict(data)
        if "partitions" not in data:
            data["partitions"] = len(rows)
        if (
            "replicationFactor" not in data
            and "replication_factor" not in data
            and isinstance(replicas, list | tuple)
        ):
            data["replicationFactor"] = len(replicas)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.min_in_sync_replicas > self.replication_factor:
            raise ValueError(
                f"minInSyncReplicas ({self.min_in_sync_replicas}) exceeds "
                f"replicationFactor ({self.replication_factor})"
            )
        rows = self.replica_assignment
        if rows is None:
            return self
        if not rows:
            raise ValueError("replicaAssignment must list at least one partition")
        ids = sorted(row.partition for row in rows)
        if ids != list(range(len(rows))):
            raise ValueError(f"replicaAssignment: partitions {ids} must be 0..{len(rows) - 1}")
        if self.partitions != len(rows):
            raise ValueError(
                f"partitions ({self.partitions}) differs from replicaAssignment ({len(rows)})"
            )
        for row in rows:
            if len(row.replicas) != self.replication_factor:
                raise ValueError(
                    f"replicaAssignment: partition {row.partition} has {len(row.replicas)} "
                    f"replicas, replicationFactor is {self.replication_factor}"
                )
        return self

    @property
    def is_manual(self) -> bool:
        """True when the spec carries a manual replica assignment."""
        return self.replica_assignment is not None

    def assignment_map(self) -> dict[int, tuple[int, ...]]:
        """The manual assignment as ``{partition: replicas}`` (empty when computed)."""
        return {row.partition: row.replicas for row in self.replica_assignment or ()}


class TopicResolution(CaseInsensitiveEnum):
    """Provisioning state of a topic, exactly as the seed names it."""

    INIT = "Init"
    PENDING = "Pending"
    INSUFFICIENT_RESOURCES = "InsufficientResources"
    INVALID_CONFIG = "InvalidConfig"
    PROVISIONED = "Provisioned"


class TopicStatus(FrozenModel):
    """Observed state of a topic; ``reason`` explains a failed resolution."""

    resolution: TopicResolution = TopicResolution.INIT
    replica_map: dict[int, tuple[int, ...]] = Field(default_factory=dict)
    reason: str | None = None

    @field_validator("replica_map", mode="before")
    @classmethod
    def _seed_list_form(cls, value: Any) -> Any:
        # The seed writes `replicaMap: [{0: [0, 1, 2]}, {1: [...]}]`; fold it into a map.
        if isinstance(value, list | tuple):
            merged: dict[Any, Any] = {}
            for row in value:
                if not isinstance(row, dict):
                    raise ValueError("replicaMap rows must be {partition: [spu ids]}")
                for key, replicas in row.items():
                    if key in merged:
                        raise ValueError(f"replicaMap lists partition {key} twice")
                    merged[key] = replicas
            return merged
        return value


class Topic(KvObject[TopicSpec, TopicStatus]):
    """A topic object (kind ``Topic``); its partitions are children in the store."""

    kind: ClassVar[str] = "Topic"

    status: TopicStatus = TopicStatus()

    @field_validator("metadata")
    @classmethod
    def _short_name(cls, value: Metadata) -> Metadata:
        check_name(value.name, MAX_TOPIC_NAME)
        return value

    @classmethod
    def new(cls, name: str, spec: TopicSpec, status: TopicStatus | None = None) -> Topic:
        """Build a topic object with revision 0 (the store assigns the real one)."""
        return cls.build(name, spec, status)
