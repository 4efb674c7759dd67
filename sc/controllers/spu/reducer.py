"""SPU controller: SPU objects to the connection manager, connectivity to SPU status.

Theory of operation (seed ``003``, "SPU Controller"):

- **Add SPU** -> ``CmAddSpu``: the connection manager registers it and will accept its
  connection. **Modify SPU** (spec or status changed) -> ``CmUpdateSpu``, which the
  connection manager pushes to every connected SPU. A status change is this
  controller's own ``Online``/``Offline`` write coming back through the KV watch, and
  it must be pushed too: a partition leader evicts a follower whose SPU went
  ``Offline`` from its in-sync set at once, instead of after ``replica_max_lag_ms``.
  A change of neither (metadata only) needs nothing. **Delete SPU** -> ``CmDeleteSpu``.
- **Online/Offline**: when the connection manager reports a connection gained or lost,
  write the SPU's status resolution (``Online``/``Offline``) unless it already says so.
- **Reconcile** with the connection manager's set of connected SPUs corrects every
  status (after an SC restart the mirrored statuses are the previous SC's view). SPUs
  still ``Init`` and not connected stay ``Init``: they never connected.
"""

from __future__ import annotations

from sc.actions import Action, CmAddSpu, CmDeleteSpu, CmUpdateSpu, KvUpdateStatus
from sc.controllers.events import (
    Change,
    ControllerEvent,
    Reconcile,
    SpuConnected,
    SpuDisconnected,
)
from sc.kv.store import ChangeType
from sc.local_store import StoreView
from spark_stream.models import Spu, SpuResolution

__all__ = ["reduce"]


def reduce(store: StoreView, event: ControllerEvent) -> list[Action]:
    """Actions for one event; events about other objects yield none."""
    match event:
        case Change(kind=Spu.kind):
            return _on_change(event)
        case SpuConnected(spu_id=spu_id):
            return _set_resolution(store.spu(spu_id), SpuResolution.ONLINE)
        case SpuDisconnected(spu_id=spu_id):
            return _set_resolution(store.spu(spu_id), SpuResolution.OFFLINE)
        case Reconcile(connected=connected) if connected is not None:
            return _reconcile(store, connected)
    return []


def _on_change(change: Change) -> list[Action]:
    if change.type is ChangeType.ADDED and isinstance(change.new, Spu):
        return [CmAddSpu(change.new)]
    if change.type is ChangeType.MODIFIED and isinstance(change.new, Spu):
        old, new = change.old, change.new
        if isinstance(old, Spu) and old.spec == new.spec and old.status == new.status:
            return []
        return [CmUpdateSpu(new)]
    if change.type is ChangeType.DELETED and isinstance(change.old, Spu):
        return [CmDeleteSpu(change.old.spu_id, change.old.name)]
    return []


def _set_resolution(spu: Spu | None, resolution: SpuResolution) -> list[Action]:
    if spu is None or spu.status.resolution is resolution:
        return []
    status = spu.status.model_copy(update={"resolution": resolution})
    return [KvUpdateStatus.of(spu, status)]


def _reconcile(store: StoreView, connected: frozenset[int]) -> list[Action]:
    actions: list[Action] = []
    for spu in store.spus():
        if spu.spu_id in connected:
            actions += _set_resolution(spu, SpuResolution.ONLINE)
        elif spu.status.resolution is SpuResolution.ONLINE:
            actions += _set_resolution(spu, SpuResolution.OFFLINE)
    return actions
