"""SC private messages (port 9004): the SPU <-> SC conversation.

Import them from ``spark_stream.protocol.control``, which lists the public names once and
holds the theory of operation; ``docs/protocol.md`` ("SC private messages") has the layouts.
Also holds the helpers the public messages share.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spark_stream.errors import FluvioError, InvalidRequestError
from spark_stream.models import (
    MAX_SPU_ID,
    Partition,
    PartitionResolution,
    PartitionSpec,
    PartitionStatus,
    PrivateEndpoint,
    PublicEndpoint,
    Spu,
    parse_partition_name,
)
from spark_stream.protocol._fields import meta_fields
from spark_stream.protocol.api import ApiKey
from spark_stream.protocol.message import Message, Role, message


def _check_spu_id(owner: str, spu_id: int) -> None:
    if not 0 <= spu_id <= MAX_SPU_ID:
        raise InvalidRequestError(f"{owner}.spu_id must be in 0..{MAX_SPU_ID}, got {spu_id}")


def _wire_error(what: str, exc: FluvioError | ValueError) -> InvalidRequestError:
    err = InvalidRequestError(f"{what}: {exc}")
    err.__cause__ = exc
    return err


class _PlainMeta(Message):
    """A message whose fields are already msgpack-ready (ints, strings, plain maps).

    Skips the generic field-by-field conversion, which costs a Python call per value:
    pushes and listings carry thousands of nested maps.
    """

    __slots__ = ()

    def to_meta(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in meta_fields(type(self)).names}


# -- private api: shared entries -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica an SPU holds, as the SC pushes it (``UpdateReplicas``).

    Attributes:
        name: the partition name, ``{topic}-{index}``.
        leader: the SPU that leads the partition now; None while no replica may lead.
        spec: replicas (leader first at assignment), initial leader and the topic's log
            settings (retention, segment size, compression, min in-sync replicas).
        revision: the partition object's KV revision; an SPU ignores an entry older than
            the one it holds.
        uid: the partition object's ``metadata.uid``: a topic deleted and created again
            has partitions of the same names and new uids, and an SPU never attaches the
            storage of one uid to another.
        leader_epoch: the partition's leader epoch (``PartitionStatus.leader_epoch``):
            the leader checks fetches against it, and an SPU ignores an incremental
            entry with an older one (a late push from before an election).
    """

    name: str
    leader: int | None
    spec: PartitionSpec
    revision: int = 0
    uid: str | None = None
    leader_epoch: int = 0
    _wire: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def topic(self) -> str:
        """The topic of the partition."""
        return parse_partition_name(self.name)[0]

    @property
    def partition(self) -> int:
        """The partition's index in its topic."""
        return parse_partition_name(self.name)[1]

    @property
    def replicas(self) -> tuple[int, ...]:
        """SPU ids of the partition's replicas (the assignment's order)."""
        return self.spec.replicas

    @classmethod
    def from_partition(cls, partition: Partition) -> Replica:
        """The entry for a stored partition: its status leader, else the initial leader.

        An ``Offline`` partition whose status names no leader has none (``leader=None``).
        """
        status = partition.status
        leader = status.leader
        if leader is None and status.resolution is PartitionResolution.INIT:
            leader = partition.spec.initial_leader
        return cls(
            partition.name,
            leader,
            partition.spec,
            partition.revision,
            partition.uid,
            status.leader_epoch,
        )

    @property
    def id(self) -> ReplicaId:
        """The partition name with the uid: which incarnation of the partition this is."""
        return ReplicaId(self.name, self.uid)

    def to_wire(self) -> dict[str, Any]:
        """The msgpack-able map (topic, partition and replicas spelled out for readers).

        Computed once per entry: the connection manager pushes one entry to every SPU
        holding the replica. Treat the result as read-only.
        """
        if self._wire is None:
            topic, index = parse_partition_name(self.name)
            wire = {
                "name": self.name,
                "topic": topic,
                "partition": index,
                "leader": self.leader,
                "replicas": list(self.spec.replicas),
                "revision": self.revision,
                "uid": self.uid,
                "leader_epoch": self.leader_epoch,
                "spec": self.spec.to_dict(),
            }
            object.__setattr__(self, "_wire", wire)
            return wire
        return self._wire

    @classmethod
    def from_wire(cls, data: Any) -> Replica:
        """Validate one entry of ``UpdateReplicas.replicas``.

        Raises:
            InvalidRequestError: the entry is malformed; the message names the field.
        """
        if not isinstance(data, dict):
            raise InvalidRequestError(f"replica entry must be a map, got {type(data).__name__}")
        name, leader, revision = data.get("name"), data.get("leader"), data.get("revision", 0)
        if not isinstance(name, str):
            raise InvalidRequestError("replica.name must be a string")
        uid = _check_uid(f"replica {name!r}", data.get("uid"))
        try:
            parse_partition_name(name)
            spec = PartitionSpec.from_dict(data.get("spec"))
        except (FluvioError, ValueError) as exc:
            raise _wire_error(f"replica {name!r}", exc) from None
        if leader is not None and (not isinstance(leader, int) or isinstance(leader, bool)):
            raise InvalidRequestError(f"replica {name!r}.leader must be an integer or nil")
        if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
            raise InvalidRequestError(f"replica {name!r}.revision must be an integer >= 0")
        epoch = data.get("leader_epoch", 0)  # an SC from before leader epochs: 0
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
            raise InvalidRequestError(f"replica {name!r}.leader_epoch must be an integer >= 0")
        return cls(name, leader, spec, revision, uid, epoch)


def _check_uid(owner: str, uid: Any) -> str | None:
    if uid is not None and (not isinstance(uid, str) or not 0 < len(uid) <= 64):
        raise InvalidRequestError(f"{owner}.uid must be a string of 1..64 characters or nil")
    return uid


@dataclass(frozen=True, slots=True)
class ReplicaId:
    """One incarnation of a partition: its name and its ``metadata.uid``.

    What an SPU reports it has on disk (``SpuConnectRequest.stored``) and what the SC
    tells it to delete (``UpdateReplicas.purge``). ``uid`` is None for a partition
    created before uids existed (and for storage written then).
    """

    name: str
    uid: str | None

    def to_wire(self) -> dict[str, Any]:
        """The msgpack-able map ``{"name": ..., "uid": ...}``."""
        return {"name": self.name, "uid": self.uid}

    @classmethod
    def from_wire(cls, data: Any) -> ReplicaId:
        """Validate one entry of ``stored`` or ``purge``.

        Raises:
            InvalidRequestError: the entry is malformed; the message names the field.
        """
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise InvalidRequestError("replica id must be a map with a string 'name'")
        name = data["name"]
        try:
            parse_partition_name(name)
        except (FluvioError, ValueError) as exc:
            raise _wire_error(f"replica id {name!r}", exc) from None
        return cls(name, _check_uid(f"replica id {name!r}", data.get("uid")))


@dataclass(frozen=True, slots=True)
class ReplicaMeta:
    """What an SPU keeps of a replica it holds, next to its data: enough to rebuild it.

    The SPU writes it (``spu.storage.replica_meta``) whenever the SC hands it a replica
    or changes one, and reports every one it holds when it connects
    (``SpuConnectRequest.replica_meta``). An SC whose store forgot the partition
    rebuilds the topic and the partition from these (``sc.rebuild``).

    Attributes:
        store_id: the identity of the SC's KV store the replica came from
            (``SpuConnectAccepted.store_id``; "" when unknown): a record of another
            store, or of a newer revision than the store has, is one the store forgot.
        replica: the entry as the SC pushed it: partition spec (replica set and the
            topic's settings), leader, leader epoch, uid and the partition's revision.
    """

    store_id: str
    replica: Replica

    def to_wire(self) -> dict[str, Any]:
        """The msgpack- and JSON-able map ``{"store": ..., "replica": Replica.to_wire()}``."""
        return {"store": self.store_id, "replica": self.replica.to_wire()}

    @classmethod
    def from_wire(cls, data: Any) -> ReplicaMeta:
        """Validate one record.

        Raises:
            InvalidRequestError: the record is malformed; the message names the field.
        """
        if not isinstance(data, dict) or not isinstance(data.get("store", ""), str):
            raise InvalidRequestError("replica meta must be a map with a string 'store'")
        store = data.get("store", "")
        if len(store) > 64:
            raise InvalidRequestError("replica meta 'store' must be at most 64 characters")
        return cls(store, Replica.from_wire(data.get("replica")))


@dataclass(frozen=True, slots=True)
class LrsStatus:
    """Live replica status of one partition, as its leader SPU reports it.

    Attributes:
        name: the partition name.
        status: leader id, LEO, HW, log start offset and ``lrs`` (per replica: SPU id,
            LEO, HW, in sync or not). ``resolution`` is ignored: the SC decides it.
    """

    name: str
    status: PartitionStatus

    def to_wire(self) -> dict[str, Any]:
        """The msgpack-able map ``{"name": ..., "status": PartitionStatus.to_dict()}``."""
        return {"name": self.name, "status": self.status.to_dict()}

    @classmethod
    def from_wire(cls, data: Any) -> LrsStatus:
        """Validate one entry of ``UpdateLrsRequest.replicas``.

        Raises:
            InvalidRequestError: the entry is malformed; the message names the field.
        """
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise InvalidRequestError("LRS entry must be a map with a string 'name'")
        name = data["name"]
        try:
            parse_partition_name(name)
            status = PartitionStatus.from_dict(data.get("status"))
        except (FluvioError, ValueError) as exc:
            raise _wire_error(f"LRS {name!r}", exc) from None
        if status.leader is None:
            raise InvalidRequestError(f"LRS {name!r}.status.leader is required")
        return cls(name, status)


# -- private api: messages -----------------------------------------------------------


@message(ApiKey.SPU_CONNECT, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class SpuConnectRequest(Message):
    """An SPU asks to join: who it is, its secret, and where it actually listens.

    Attributes:
        spu_id: the id registered in the SC (custom SPUs) or given by its group.
        token: the shared secret of the cluster (``spu_token`` in the packaged ``sc.yaml``).
        public_endpoint: ``PublicEndpoint.to_dict()`` of the port it bound for clients;
            None keeps the registered one. The SC stores it in the SPU spec.
        private_endpoint: ``PrivateEndpoint.to_dict()`` of its replication port.
        stored: ``ReplicaId.to_wire()`` of every replica directory in its data
            directory; the SC answers with ``UpdateReplicas.purge`` for those whose
            partition was deleted (or re-created) meanwhile.
        replica_meta: ``ReplicaMeta.to_wire()`` of the replicas it keeps metadata of:
            an SC whose store forgot them rebuilds them (``sc.rebuild``).
        group: the SPU group that manages it (None: a custom SPU); a store that forgot
            a custom SPU registers it again, a managed one comes back with its group.
    """

    spu_id: int
    token: str
    public_endpoint: dict[str, Any] | None = None
    private_endpoint: dict[str, Any] | None = None
    stored: list[dict[str, Any]] = field(default_factory=list)
    replica_meta: list[dict[str, Any]] = field(default_factory=list)
    group: str | None = None

    def __post_init__(self) -> None:
        _check_spu_id("SpuConnectRequest", self.spu_id)

    @classmethod
    def build(
        cls,
        spu_id: int,
        token: str,
        public: PublicEndpoint | None = None,
        private: PrivateEndpoint | None = None,
        stored: Iterable[ReplicaId] = (),
        replica_meta: Iterable[ReplicaMeta] = (),
        group: str | None = None,
    ) -> SpuConnectRequest:
        """The request from endpoint models and the replicas found on disk."""
        return cls(
            spu_id,
            token,
            public.to_dict() if public is not None else None,
            private.to_dict() if private is not None else None,
            [entry.to_wire() for entry in stored],
            [record.to_wire() for record in replica_meta],
            group,
        )

    def stored_replicas(self) -> list[ReplicaId]:
        """The ``stored`` entries as ``ReplicaId`` values (see ``ReplicaId.from_wire``)."""
        return [ReplicaId.from_wire(item) for item in self.stored]

    def replica_records(self) -> list[ReplicaMeta]:
        """The ``replica_meta`` entries as ``ReplicaMeta`` values.

        Raises:
            InvalidRequestError: an entry is malformed; the message names the field.
        """
        return [ReplicaMeta.from_wire(item) for item in self.replica_meta]

    def endpoints(self) -> tuple[PublicEndpoint | None, PrivateEndpoint | None]:
        """The endpoints as models.

        Raises:
            InvalidRequestError: an endpoint does not validate (names the field).
        """
        try:
            public = (
                PublicEndpoint.from_dict(self.public_endpoint)
                if self.public_endpoint is not None
                else None
            )
            private = (
                PrivateEndpoint.from_dict(self.private_endpoint)
                if self.private_endpoint is not None
                else None
            )
        except FluvioError as exc:
            raise _wire_error(f"SpuConnectRequest from SPU {self.spu_id}", exc) from None
        return public, private


@message(ApiKey.SPU_CONNECT, Role.PUSH)
@dataclass(frozen=True, slots=True)
class SpuConnectAccepted(Message):
    """First push of an ``SPU_CONNECT`` stream: the SC accepted the SPU.

    Attributes:
        spu_id: the id the connection is now bound to.
        heartbeat_timeout_s: silence after which the SC drops the SPU; send a heartbeat
            (or LRS) well within it, e.g. every third of it.
        revision: the KV revision when the SPU was accepted.
        store_id: the identity of the SC's KV store (``KvStore.store_id``); the SPU
            writes it into the metadata it keeps of its replicas (``ReplicaMeta``).
    """

    spu_id: int
    heartbeat_timeout_s: float
    revision: int = 0
    store_id: str = ""


@message(ApiKey.UPDATE_SPUS, Role.PUSH)
@dataclass(frozen=True, slots=True)
class UpdateSpus(_PlainMeta):
    """SPU specs (with endpoints and status) pushed to a connected SPU.

    Attributes:
        full: True: ``spus`` is every SPU, replace the local view; False: changes only.
        spus: ``Spu.to_dict()`` of each SPU added or changed (or all of them).
        deleted: ids of SPUs removed (incremental pushes only).
        revision: the KV revision the push reflects.
    """

    full: bool
    spus: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    revision: int = 0

    @classmethod
    def build(
        cls, spus: Iterable[Spu], *, full: bool, deleted: Iterable[int] = (), revision: int = 0
    ) -> UpdateSpus:
        """The push from SPU models."""
        return cls(full, [s.to_dict() for s in spus], list(deleted), revision)

    def spu_objects(self) -> list[Spu]:
        """The SPUs as models.

        Raises:
            InvalidRequestError: an entry does not validate (names the field).
        """
        try:
            return [Spu.from_dict(item) for item in self.spus]
        except FluvioError as exc:
            raise _wire_error("UpdateSpus", exc) from None


@message(ApiKey.UPDATE_REPLICAS, Role.PUSH)
@dataclass(frozen=True, slots=True)
class UpdateReplicas(_PlainMeta):
    """The replicas a connected SPU holds (as leader or follower).

    Attributes:
        full: True: ``replicas`` is the complete set for this SPU (drop any other);
            False: ``replicas`` added or changed (e.g. a new leader), ``deleted`` removed.
        replicas: ``Replica.to_wire()`` entries.
        deleted: partition names this SPU no longer holds (a replica that moved away:
            its storage is kept, and reattached if the replica comes back).
        revision: the KV revision the push reflects.
        purge: ``ReplicaId.to_wire()`` of partitions that no longer exist (their topic
            was deleted): the SPU drops such a replica if it holds it and deletes its
            directory if that holds this uid. Sent to every SPU when a partition is
            deleted, and in a full push for the ``stored`` entries the SPU reported.
    """

    full: bool
    replicas: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    revision: int = 0
    purge: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        replicas: Iterable[Replica],
        *,
        full: bool,
        deleted: Iterable[str] = (),
        revision: int = 0,
        purge: Iterable[ReplicaId] = (),
    ) -> UpdateReplicas:
        """The push from replica entries."""
        return cls(
            full,
            [r.to_wire() for r in replicas],
            list(deleted),
            revision,
            [entry.to_wire() for entry in purge],
        )

    def replica_entries(self) -> list[Replica]:
        """The entries as ``Replica`` values (see ``Replica.from_wire``)."""
        return [Replica.from_wire(item) for item in self.replicas]

    def purge_entries(self) -> list[ReplicaId]:
        """The ``purge`` entries as ``ReplicaId`` values (see ``ReplicaId.from_wire``)."""
        return [ReplicaId.from_wire(item) for item in self.purge]


@message(ApiKey.UPDATE_LRS, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class UpdateLrsRequest(_PlainMeta):
    """A leader SPU reports the live replica status of partitions it leads.

    Attributes:
        spu_id: the reporting SPU (must be the connection's SPU).
        replicas: ``LrsStatus.to_wire()`` entries, only those that changed or all.
    """

    spu_id: int
    replicas: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_spu_id("UpdateLrsRequest", self.spu_id)

    @classmethod
    def build(cls, spu_id: int, statuses: Iterable[LrsStatus]) -> UpdateLrsRequest:
        """The request from ``LrsStatus`` values."""
        return cls(spu_id, [s.to_wire() for s in statuses])

    def statuses(self) -> list[LrsStatus]:
        """The entries as ``LrsStatus`` values (see ``LrsStatus.from_wire``)."""
        return [LrsStatus.from_wire(item) for item in self.replicas]


@message(ApiKey.UPDATE_LRS, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class UpdateLrsResponse(Message):
    """Which reported partitions the SC took.

    Attributes:
        accepted: how many entries were forwarded to the partition controller.
        rejected: names of entries refused (unknown partition, or the reporter is not a
            replica of it); the SPU should wait for the next ``UpdateReplicas``.
    """

    accepted: int = 0
    rejected: list[str] = field(default_factory=list)


@message(ApiKey.HEARTBEAT, Role.REQUEST)
@dataclass(frozen=True, slots=True)
class HeartbeatRequest(Message):
    """An SPU is alive (any request counts, this one is for quiet periods).

    Attributes:
        applied_generations: per consumer group, the newest plan generation whose
            delivery gates this SPU applied (an older SC ignores the key).
        gate_rejections: per consumer group, the group fetches its gates refused since
            the SPU started, per reason (``not_ready``, ``fenced``).
    """

    spu_id: int
    applied_generations: dict[str, int] = field(default_factory=dict)
    gate_rejections: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_spu_id("HeartbeatRequest", self.spu_id)


@message(ApiKey.HEARTBEAT, Role.RESPONSE)
@dataclass(frozen=True, slots=True)
class HeartbeatResponse(Message):
    """The SC's acknowledgement, with its current KV revision.

    Attributes:
        revision: the newest revision the SC's local store has seen.
    """

    revision: int = 0
