"""Actions: what the SC controllers ask the outside world to do, as plain data.

Controllers are pure reducers; each returns a list of these frozen dataclasses and the
action dispatcher routes them by family:

- ``KvAction`` -> the KV updater (writes to the cluster's desired/observed state);
- ``CmAction`` -> the connection manager (specs and leader changes sent to SPUs);
- ``ProvisionerAction`` -> the SPU provisioner (start/stop managed SPU processes).

KV actions are generic over the kind registry (``spark_stream.models.KINDS``), in the
shape of Fluvio's ``WSAction``: create an object, update an object's spec or status,
delete an object, each naming its object by kind and name. A new kind registered there
needs no new action class and no new arm in the updater.

Spec and status writes carry ``revision``: the object revision the controller decided
on. The updater uses it for a compare-and-set write; a conflict means a newer change is
on its way to the controller, which will decide again, so the updater can drop the
action. A status write without a revision (``None``) is unconditional.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spark_stream.models import FrozenModel, KvObject, Partition, Spu, SpuTemplate, object_class

__all__ = [
    "KvCreate",
    "KvUpdateSpec",
    "KvUpdateStatus",
    "KvDelete",
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
class KvCreate:
    """Create ``obj`` (of any registered kind); a child needs its parent to exist."""

    obj: KvObject[Any, Any]

    def __post_init__(self) -> None:
        object_class(self.obj.kind)

    @property
    def kind(self) -> str:
        """The object's kind."""
        return self.obj.kind

    @property
    def name(self) -> str:
        """The object's name."""
        return self.obj.name

    def __str__(self) -> str:
        return f"KvCreate({self.kind} {self.name})"


@dataclass(frozen=True, slots=True)
class KvUpdateSpec:
    """Replace the spec of ``kind``/``name`` if the object is still at ``revision``."""

    kind: str
    name: str
    spec: FrozenModel
    revision: int

    def __post_init__(self) -> None:
        object_class(self.kind)

    @classmethod
    def of(cls, obj: KvObject[Any, Any], spec: FrozenModel) -> KvUpdateSpec:
        """The spec write decided on ``obj``: compare-and-set against the revision read."""
        return cls(obj.kind, obj.name, spec, obj.revision)

    def __str__(self) -> str:
        return f"KvUpdateSpec({self.kind} {self.name} @{self.revision})"


@dataclass(frozen=True, slots=True)
class KvUpdateStatus:
    """Write the status of ``kind``/``name``; compare-and-set when ``revision`` is given."""

    kind: str
    name: str
    status: FrozenModel
    revision: int | None = None

    def __post_init__(self) -> None:
        object_class(self.kind)

    @classmethod
    def of(cls, obj: KvObject[Any, Any], status: FrozenModel) -> KvUpdateStatus:
        """The status write decided on ``obj``: compare-and-set against the revision read."""
        return cls(obj.kind, obj.name, status, obj.revision)

    def __str__(self) -> str:
        return f"KvUpdateStatus({self.kind} {self.name} -> {_summary(self.status)})"


@dataclass(frozen=True, slots=True)
class KvDelete:
    """Delete ``kind``/``name`` and, with it, its children."""

    kind: str
    name: str

    def __post_init__(self) -> None:
        object_class(self.kind)

    def __str__(self) -> str:
        return f"KvDelete({self.kind} {self.name})"


KvAction = KvCreate | KvUpdateSpec | KvUpdateStatus | KvDelete


def _summary(model: FrozenModel) -> str:
    """The scalar fields of ``model`` (``resolution=Online leader=1``), for logs.

    Lists and maps (a partition's replica statuses, a topic's replica map) are left out:
    a log line names the change, not the whole object.
    """
    fields = model.to_dict()
    return " ".join(f"{k}={v}" for k, v in fields.items() if not isinstance(v, list | dict))


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
    """The partition is gone: its SPUs drop the replica, and every SPU deletes its storage.

    ``uid`` (the deleted object's ``metadata.uid``) says which incarnation to delete, so
    a purge never reaches the storage of a topic created again under the same name.
    """

    name: str
    replicas: tuple[int, ...]
    uid: str | None = None


@dataclass(frozen=True, slots=True)
class CmLeaderChange:
    """Tell a partition's replicas that ``leader`` now leads it, at ``leader_epoch``."""

    name: str
    leader: int
    replicas: tuple[int, ...]
    leader_epoch: int = 0


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
