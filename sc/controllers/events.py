"""The events controllers reduce: KV changes, connection-manager news, reconcile sweeps.

- ``Change`` (from ``sc.local_store``): an object was added, modified or deleted in the KV.
- ``SpuConnected`` / ``SpuDisconnected``: the connection manager accepted or lost an
  SPU's connection.
- ``LrsUpdate``: a leader SPU reported its partition's live replica status.
- ``Reconcile``: sweep the whole snapshot and repair whatever does not match, e.g.
  after SC start-up once the mirror is loaded and SPUs had time to reconnect. A
  reconcile on a snapshot that already matches yields no actions.
- ``ElectPreferred``: move leadership back to preferred replicas (the SC's periodic
  leader rebalance, or the admin's ``partition elect-preferred``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sc.local_store import Change
from spark_stream.models import ReplicaStatus

__all__ = [
    "Change",
    "SpuConnected",
    "SpuDisconnected",
    "LrsUpdate",
    "Reconcile",
    "ElectPreferred",
    "ControllerEvent",
]


@dataclass(frozen=True, slots=True)
class SpuConnected:
    """The connection manager authorised and holds a connection from ``spu_id``."""

    spu_id: int


@dataclass(frozen=True, slots=True)
class SpuDisconnected:
    """The connection manager lost its connection to ``spu_id``."""

    spu_id: int


@dataclass(frozen=True, slots=True)
class LrsUpdate:
    """A leader's live replica status for one partition.

    Attributes:
        partition: the partition name (``{topic}-{index}``).
        leader: the reporting leader's SPU id.
        replicas: every replica's status as the leader sees it (leader included).
        leo: the leader's log end offset.
        hw: the leader's high watermark.
        log_start_offset: the first offset still stored (-1: not known).
        size: bytes of the leader's log (-1: not known).
        tier: the leader's tiering state (``PartitionStatus.tier``).
    """

    partition: str
    leader: int
    replicas: tuple[ReplicaStatus, ...]
    leo: int
    hw: int
    log_start_offset: int = -1
    size: int = -1
    tier: str | None = None


@dataclass(frozen=True, slots=True)
class Reconcile:
    """Sweep the snapshot and repair drift.

    Attributes:
        connected: SPU ids the connection manager holds connections to, when known;
            the SPU controller then corrects every SPU's Online/Offline status.
    """

    connected: frozenset[int] | None = None


@dataclass(frozen=True, slots=True)
class ElectPreferred:
    """Hand partitions back to their preferred leader (``sc.controllers.partition.preferred``).

    Attributes:
        limit: most partitions moved by this sweep.
        imbalance_pct: only SPUs whose imbalance is above this percentage get partitions
            back (0: any imbalance).
        topic: only this topic's partitions (None: every topic).
    """

    limit: int
    imbalance_pct: float = 0.0
    topic: str | None = None


ControllerEvent = Change | SpuConnected | SpuDisconnected | LrsUpdate | Reconcile | ElectPreferred
