"""Actions: what the SC controllers ask the outside world to do, as plain data.

Controllers are pure reducers; each returns a list of these frozen dataclasses and the
action dispatcher routes them by family:

- ``KvAction`` -> the KV updater (writes to the cluster's desired/observed state);
- ``CmAction`` -> the connection manager (specs and leader changes sent to SPUs);
- ``ProvisionerAction`` -> the SPU provisioner (start/stop managed SPU processes).

Status writes carry ``revision``: the object revision the controller decided on. The
updater may use it for a compare-and-set write; a conflict means a newer change is on
its way to the controller, which will decide again, so the updater can drop the action.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_stream.models import (
    Partition,
    PartitionStatus,
    Spu,
    SpuGroupStatus,
    SpuStatus,
    SpuTemplate,
    TopicStatus,
)

__all__ = [
    "UpdateTopicStatus",
    "CreatePartition",
    "DeletePartition",
    "UpdatePartitionStatus",
    "CreateSpu",
    "DeleteSpu",
    "UpdateSpuStatus",
    "UpdateSpuGroupStatus",
    "CmAddSpu",
    "CmUpdateSpu",
    "CmDeleteSpu",
    "CmAddPartition",
    "CmUpdatePartition",
    "CmDeletePartition",
    "CmLeaderChange",
    "ProvisionSpu",
    "TerminateSpu",
    "KvAction",
    "CmAction",
    "ProvisionerAction",
    "Action",
]

# -- KV store ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UpdateTopicStatus:
    """Write a topic's status (resolution, replica map, reason)."""

    name: str
    status: TopicStatus
    revision: int | None = None


@dataclass(frozen=True, slots=True)
class CreatePartition:
    """Create a partition object (a child of its topic)."""

    partition: Partition


@dataclass(frozen=True, slots=True)
class DeletePartition:
    """Delete a partition object."""

    name: str


@dataclass(frozen=True, slots=True)
class UpdatePartitionStatus:
    """Write a partition's status (resolution, leader, live replicas)."""

    name: str
    status: PartitionStatus
    revision: int | None = None


@dataclass(frozen=True, slots=True)
class CreateSpu:
    """Register an SPU object (managed SPUs: a child of their SPU group)."""

    spu: Spu


@dataclass(frozen=True, slots=True)
class DeleteSpu:
    """Remove an SPU object."""

    name: str


@dataclass(frozen=True, slots=True)
class UpdateSpuStatus:
    """Write an SPU's status (its connectivity resolution)."""

    name: str
    status: SpuStatus
    revision: int | None = None


@dataclass(frozen=True, slots=True)
class UpdateSpuGroupStatus:
    """Write an SPU group's status (Init/Invalid/Reserved and reason)."""

    name: str
    status: SpuGroupStatus
    revision: int | None = None


KvAction = (
    UpdateTopicStatus
    | CreatePartition
    | DeletePartition
    | UpdatePartitionStatus
    | CreateSpu
    | DeleteSpu
    | UpdateSpuStatus
    | UpdateSpuGroupStatus
)

# -- connection manager --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CmAddSpu:
    """Register an SPU with the connection manager, which then accepts its connection."""

    spu: Spu


@dataclass(frozen=True, slots=True)
class CmUpdateSpu:
    """Hand the connection manager an SPU's changed spec or status (pushed to connected SPUs).

    Status changes matter to the SPUs: a leader drops a follower whose SPU is ``Offline``
    from its in-sync set at once.
    """

    spu: Spu


@dataclass(frozen=True, slots=True)
class CmDeleteSpu:
    """Forget an SPU: the connection manager drops and refuses its connection."""

    spu_id: int
    name: str


@dataclass(frozen=True, slots=True)
class CmAddPartition:
    """Hand the connection manager a partition spec for its replicas' SPUs."""

    partition: Partition


@dataclass(frozen=True, slots=True)
class CmUpdatePartition:
    """Hand the connection manager a partition's changed spec."""

    partition: Partition


@dataclass(frozen=True, slots=True)
class CmDeletePartition:
    """Tell the partition's SPUs to drop the replica (their storage is kept)."""

    name: str
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CmLeaderChange:
    """Tell a partition's replicas that ``leader`` now leads it."""

    name: str
    leader: int
    replicas: tuple[int, ...]


CmAction = (
    CmAddSpu
    | CmUpdateSpu
    | CmDeleteSpu
    | CmAddPartition
    | CmUpdatePartition
    | CmDeletePartition
    | CmLeaderChange
)

# -- provisioner ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProvisionSpu:
    """Start a managed SPU of ``group`` with the group's template."""

    spu_id: int
    name: str
    group: str
    template: SpuTemplate


@dataclass(frozen=True, slots=True)
class TerminateSpu:
    """Stop a managed SPU (its storage is kept, as for any removed replica)."""

    spu_id: int
    name: str
    group: str


ProvisionerAction = ProvisionSpu | TerminateSpu

Action = KvAction | CmAction | ProvisionerAction
