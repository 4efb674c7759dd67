"""The dispatcher's reducer: replica specs and running roles in, role changes out.

Theory of operation (seed ``002``: "Dispatch SPU/Partition", "Leader Controller",
"Follower Controller"). This SPU **holds** a replica when it is one of the partition's
replicas or leads it, unless the SC purged it (its partition was deleted). A replica is
a partition *incarnation*: its name and its uid (``Replica.id``); an open log stores one
incarnation, so a topic deleted and created again (same name, new uid) is a different
replica whose log must not be the old one. From this SPU's id, the replica entries the
SC pushed, the purged incarnations and a snapshot of what runs (``Roles``) the plan is,
in this order:

1. ``StopLeader``: leader controllers of replicas this SPU no longer leads;
2. ``SetFollowed``: follower controllers drop the replicas they no longer follow, before
   anyone else touches those logs;
3. ``CloseLog``: logs of replicas no longer held, or held in another incarnation
   (**the storage stays on disk**: a replica that moved away may come back);
4. ``OpenLog``: logs of newly held replicas (the same incarnation reattaches its
   directory; the shell empties a directory that holds another one);
5. ``RemoveStorage``: the directories of the purged incarnations not held here (the
   shell deletes a directory only if it holds that uid);
6. ``StartLeader`` per replica this SPU now leads, ``UpdateLeader`` (the spec) for each
   running one;
7. replicas led elsewhere go to one follower controller per leader SPU:
   ``StartFollower`` on first need, then ``SetFollowed``; ``StopFollower`` once its last
   replica left.

A held replica with no leader (``leader=None``: none may lead now) keeps its log open and
has no controller. Steps 1-5 (``plan_logs``) need only the snapshot; steps 6-7
(``plan_controllers``) act on the logs that are open, so the dispatcher runs the first
half, snapshots again and plans the second: a log that failed to open gets no
controller. Once both halves ran, planning again gives nothing but ``UpdateLeader``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from spark_stream.frame_check import PayloadCheck
from spark_stream.models import TopicSettings
from spark_stream.protocol.control import Replica, ReplicaId
from spu.storage import LogConfig

__all__ = [
    "Action",
    "CloseLog",
    "OpenLog",
    "RemoveStorage",
    "Roles",
    "SetFollowed",
    "StartFollower",
    "StartLeader",
    "StopFollower",
    "StopLeader",
    "UpdateLeader",
    "merge_replicas",
    "plan_controllers",
    "plan_logs",
    "storage_config",
]


# -- actions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StopLeader:
    """Stop the leader controller of ``name`` (its log stays open)."""

    name: str


@dataclass(frozen=True, slots=True)
class SetFollowed:
    """Make the follower controller of ``leader_id`` follow exactly ``names``."""

    leader_id: int
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CloseLog:
    """Close the log of ``name``; its directory and data stay for a later reattach."""

    name: str


@dataclass(frozen=True, slots=True)
class OpenLog:
    """Open (create or reattach) the log of ``replica``."""

    replica: Replica


@dataclass(frozen=True, slots=True)
class RemoveStorage:
    """Delete the directory of a deleted partition, if it holds ``replica.uid``."""

    replica: ReplicaId


@dataclass(frozen=True, slots=True)
class StartLeader:
    """Start a leader controller on the (open) log of ``replica``."""

    replica: Replica


@dataclass(frozen=True, slots=True)
class UpdateLeader:
    """Hand the running leader controller of ``replica.name`` its current spec."""

    replica: Replica


@dataclass(frozen=True, slots=True)
class StartFollower:
    """Start the follower controller for replicas led by ``leader_id`` (following none)."""

    leader_id: int


@dataclass(frozen=True, slots=True)
class StopFollower:
    """Stop the follower controller for replicas led by ``leader_id``."""

    leader_id: int


Action = (
    StopLeader
    | SetFollowed
    | CloseLog
    | OpenLog
    | RemoveStorage
    | StartLeader
    | UpdateLeader
    | StartFollower
    | StopFollower
)


# -- the snapshot ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Roles:
    """What runs on this SPU now, in the dispatcher's order.

    Attributes:
        leaders: replicas with a running leader controller.
        logs: replicas whose log is open, each with the uid of the incarnation it stores.
        followers: per leader SPU id with a follower controller, the replicas it follows.
    """

    leaders: tuple[str, ...] = ()
    logs: Mapping[str, str | None] = field(default_factory=dict)
    followers: Mapping[int, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "logs", MappingProxyType(dict(self.logs)))
        frozen = MappingProxyType({k: frozenset(v) for k, v in self.followers.items()})
        object.__setattr__(self, "followers", frozen)


# -- the plan ------------------------------------------------------------------------


def _held(
    spu_id: int, replicas: Iterable[Replica], purge: Iterable[ReplicaId] = ()
) -> dict[str, Replica]:
    """The replicas this SPU holds, by name, in the push's order (purged ones are not)."""
    gone = set(purge)
    return {
        r.name: r
        for r in replicas
        if (spu_id in r.replicas or r.leader == spu_id) and r.id not in gone
    }


def _opened(held: Mapping[str, Replica], roles: Roles) -> dict[str, Replica]:
    """The held replicas whose open log stores their incarnation."""
    return {name: r for name, r in held.items() if name in roles.logs and roles.logs[name] == r.uid}


def plan_logs(
    spu_id: int,
    replicas: Iterable[Replica],
    roles: Roles,
    purge: Iterable[ReplicaId] = (),
) -> list[Action]:
    """Steps 1-5: controllers release what they lose, then logs close and open.

    Args:
        spu_id: this SPU.
        replicas: the replica entries the SC pushed (any SPU's; those not held are ignored).
        roles: what runs now.
        purge: incarnations of deleted partitions (``UpdateReplicas.purge``).

    Returns:
        The actions in the order to run them.
    """
    purge = tuple(purge)
    held = _held(spu_id, replicas, purge)
    kept = _opened(held, roles)
    actions: list[Action] = []
    for name in roles.leaders:
        if name not in kept or kept[name].leader != spu_id:
            actions.append(StopLeader(name))
    for leader_id, followed in roles.followers.items():
        keep = tuple(
            name
            for name in roles.logs
            if name in followed and name in kept and kept[name].leader == leader_id
        )
        if frozenset(keep) != followed:
            actions.append(SetFollowed(leader_id, keep))
    actions += [CloseLog(name) for name in roles.logs if name not in kept]
    actions += [OpenLog(r) for name, r in held.items() if name not in kept]
    actions += [RemoveStorage(entry) for entry in dict.fromkeys(purge) if entry.name not in held]
    return actions


def plan_controllers(spu_id: int, replicas: Iterable[Replica], roles: Roles) -> list[Action]:
    """Steps 6-7: leader and follower controllers for the held replicas with an open log.

    Args:
        spu_id: this SPU.
        replicas: the replica entries the SC pushed.
        roles: what runs once ``plan_logs`` ran (a log that failed to open is absent).

    Returns:
        The actions in the order to run them.
    """
    opened = _opened(_held(spu_id, replicas), roles).values()
    actions: list[Action] = []
    for replica in opened:
        if replica.leader == spu_id:
            known = replica.name in roles.leaders
            actions.append(UpdateLeader(replica) if known else StartLeader(replica))
    follow: dict[int, list[str]] = {}
    for replica in opened:
        if replica.leader is not None and replica.leader != spu_id:
            follow.setdefault(replica.leader, []).append(replica.name)
    for leader_id, names in follow.items():
        followed = roles.followers.get(leader_id)
        if followed is None:
            actions.append(StartFollower(leader_id))
        if frozenset(names) != followed:
            actions.append(SetFollowed(leader_id, tuple(names)))
    actions += [StopFollower(leader_id) for leader_id in roles.followers if leader_id not in follow]
    return actions


# -- the replica view ----------------------------------------------------------------


def _stale(entry: Replica, held: Replica) -> bool:
    """Whether an incremental entry is older than the one held: an older revision, or an
    older leader epoch of the same incarnation (a push from before an election)."""
    if entry.revision and entry.revision < held.revision:
        return True
    return entry.uid == held.uid and entry.leader_epoch < held.leader_epoch


def merge_replicas(
    held: Mapping[str, Replica],
    entries: Iterable[Replica],
    *,
    full: bool,
    deleted: Iterable[str] = (),
    purge: Iterable[ReplicaId] = (),
) -> dict[str, Replica]:
    """The replica view after an ``UpdateReplicas`` push (``held`` is left as it was).

    A full push replaces the view; an incremental one drops ``deleted`` and takes each
    entry unless it is older than the one held. Purged incarnations then leave the view
    (their partition is gone, whatever an earlier entry said).
    """
    if full:
        view = {r.name: r for r in entries}
    else:
        view = dict(held)
        for name in deleted:
            view.pop(name, None)
        for entry in entries:
            current = view.get(entry.name)
            if current is None or not _stale(entry, current):
                view[entry.name] = entry
    for gone in purge:
        if (current := view.get(gone.name)) is not None and current.id == gone:
            del view[gone.name]
    return view


# -- storage settings ----------------------------------------------------------------

_ENGINE_DEFAULTS = LogConfig()


def storage_config(
    settings: TopicSettings, *, max_batch_bytes: int, check_payload: PayloadCheck = "full"
) -> LogConfig:
    """The log settings of a replica: the topic's where it sets them, else the engine's.

    A tiered topic's local retention is ``local_retention_secs`` when set (else its
    retention, as without a tier). No inline flush policy: ``spu.housekeeping`` fsyncs
    off the event loop instead. The
    topic's segment size is taken as it is (the topic spec bounds it): a batch larger
    than a segment gets a segment of its own.

    Args:
        settings: the topic settings the partition spec carries.
        max_batch_bytes: the largest produce batch this SPU accepts.
        check_payload: how much of each appended payload to check (the SPU's
            ``frame_validation``).
    """
    segment, retention = settings.segment_size, settings.retention_secs
    if settings.tier is not None and settings.local_retention_secs is not None:
        retention = settings.local_retention_secs  # the tier keeps history for retention_secs
    return LogConfig(
        segment_max_bytes=(_ENGINE_DEFAULTS.segment_max_bytes if segment is None else segment),
        retention_ms=_ENGINE_DEFAULTS.retention_ms if retention is None else retention * 1000,
        retention_bytes=(
            _ENGINE_DEFAULTS.retention_bytes
            if settings.max_partition_size is None
            else settings.max_partition_size
        ),
        flush_bytes=None,
        flush_interval_ms=None,
        max_batch_bytes=max_batch_bytes,
        check_payload=check_payload,
    )
