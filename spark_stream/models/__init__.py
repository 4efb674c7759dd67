"""Cluster object models: SPU, SPU group, Topic, Partition, ConsumerGroup (Kubernetes style).

Every object is ``{metadata: {name, revision, parent}, spec, status}``; the SC writes
specs, status is written separately. Models are frozen pydantic v2 models with the
seeds' camelCase names as aliases. ``KINDS`` maps each kind name (the KV store's key)
to its class; ``load_yaml`` reads any object by its ``kind``.
"""

from __future__ import annotations

from typing import Any

from spark_stream.errors import InvalidConfigError
from spark_stream.models._base import (
    NAME_RULE,
    CaseInsensitiveEnum,
    FrozenModel,
    KvObject,
    Metadata,
    ObjectRef,
    check_name,
    config_error,
    load_yaml_mapping,
    parse_model,
)
from spark_stream.models.group import (
    LEAVE_EPOCH,
    MAX_CLIENT_FIELD,
    MAX_EPOCH,
    MAX_GROUP_NAME,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerGroupSpec,
    ConsumerGroupStatus,
    GroupGrant,
    GroupKind,
    GroupMember,
    GroupState,
    check_group_name,
    check_instance_id,
    check_member_epoch,
    check_member_id,
    check_pattern,
    matching_topics,
)
from spark_stream.models.partition import (
    Partition,
    PartitionResolution,
    PartitionSpec,
    PartitionStatus,
    ReplicaStatus,
    parse_partition_name,
    partition_name,
)
from spark_stream.models.spu import (
    MAX_SPU_ID,
    Encryption,
    IngressAddr,
    PrivateEndpoint,
    PublicEndpoint,
    Spu,
    SpuResolution,
    SpuSpec,
    SpuStatus,
    SpuType,
)
from spark_stream.models.spu_group import (
    SpuGroup,
    SpuGroupResolution,
    SpuGroupSpec,
    SpuGroupStatus,
    SpuTemplate,
    StorageConfig,
    parse_size,
)
from spark_stream.models.topic import (
    MAX_PARTITIONS,
    MAX_SEGMENT_SIZE,
    MAX_TOPIC_NAME,
    MIN_SEGMENT_SIZE,
    Compression,
    PartitionAssignment,
    Topic,
    TopicResolution,
    TopicSettings,
    TopicSpec,
    TopicStatus,
)
from spark_stream.models.topic_schema import TopicSchema

__all__ = [
    "TopicSchema",
    "NAME_RULE",
    "MAX_SPU_ID",
    "MAX_PARTITIONS",
    "MAX_TOPIC_NAME",
    "MIN_SEGMENT_SIZE",
    "MAX_SEGMENT_SIZE",
    "KINDS",
    "AnyObject",
    "CaseInsensitiveEnum",
    "FrozenModel",
    "KvObject",
    "Metadata",
    "ObjectRef",
    "check_name",
    "config_error",
    "parse_model",
    "object_class",
    "object_from_dict",
    "load_yaml",
    # SPU
    "Encryption",
    "IngressAddr",
    "PrivateEndpoint",
    "PublicEndpoint",
    "Spu",
    "SpuResolution",
    "SpuSpec",
    "SpuStatus",
    "SpuType",
    # SPU group
    "SpuGroup",
    "SpuGroupResolution",
    "SpuGroupSpec",
    "SpuGroupStatus",
    "SpuTemplate",
    "StorageConfig",
    "parse_size",
    # Topic
    "Compression",
    "PartitionAssignment",
    "Topic",
    "TopicResolution",
    "TopicSettings",
    "TopicSpec",
    "TopicStatus",
    # Partition
    "Partition",
    "PartitionResolution",
    "PartitionSpec",
    "PartitionStatus",
    "ReplicaStatus",
    "parse_partition_name",
    "partition_name",
    # Consumer group
    "LEAVE_EPOCH",
    "MAX_CLIENT_FIELD",
    "MAX_EPOCH",
    "MAX_GROUP_NAME",
    "STATIC_LEAVE_EPOCH",
    "ConsumerGroup",
    "ConsumerGroupSpec",
    "ConsumerGroupStatus",
    "GroupGrant",
    "GroupKind",
    "GroupMember",
    "GroupState",
    "check_group_name",
    "check_instance_id",
    "check_pattern",
    "matching_topics",
    "check_member_epoch",
    "check_member_id",
]

#: Any stored cluster object.
AnyObject = Spu | SpuGroup | Topic | Partition | ConsumerGroup

#: Kind name -> object class.
KINDS: dict[str, type[KvObject[Any, Any]]] = {
    cls.kind: cls for cls in (Spu, SpuGroup, Topic, Partition, ConsumerGroup)
}


def object_class(kind: str) -> type[KvObject[Any, Any]]:
    """The class registered for ``kind``.

    Raises:
        InvalidConfigError: no such kind.
    """
    try:
        return KINDS[kind]
    except KeyError:
        known = ", ".join(sorted(KINDS))
        raise InvalidConfigError(f"kind: unknown kind {kind!r} (known: {known})") from None


def object_from_dict(kind: str, data: Any) -> KvObject[Any, Any]:
    """Validate ``data`` (a ``to_dict`` result, e.g. from msgpack) as a ``kind`` object."""
    return object_class(kind).from_dict(data)


def load_yaml(text: str) -> KvObject[Any, Any]:
    """Read one object from YAML, choosing its class by the document's ``kind``.

    Raises:
        InvalidConfigError: bad YAML, missing or unknown ``kind``, or invalid object.
    """
    doc = load_yaml_mapping(text)
    kind = doc.get("kind")
    if not isinstance(kind, str):
        raise InvalidConfigError("kind: a YAML object needs a 'kind' (Spu, Topic, ...)")
    return object_class(kind).from_dict(doc)
