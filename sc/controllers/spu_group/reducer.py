"""SPU group controller: reserve a group's SPU ids and keep its managed SPUs in step.

Theory of operation (seed ``003``, "SPU Groups"):

- **Status**: ``Init`` when created; the controller checks the id range
  (``policy.conflict``) -> ``Invalid`` with the reason, or ``Reserved``.
- **Reserved** group -> its managed SPUs match ``replicas``: every missing id of
  ``minId .. minId + replicas - 1`` gets a ``KvCreate`` of its SPU and ``ProvisionSpu``
  (provisioner); a managed SPU above the range (replicas lowered: the highest ids) gets
  a ``KvDelete``. An ``Invalid`` group provisions and deletes nothing.
- **Managed SPU deleted** (scale down, or the group deleted: the KV store deletes the
  group's SPUs with it) -> ``TerminateSpu``: the process follows its SPU object.
- **Custom SPU added** -> groups are re-checked: one whose range now holds it turns
  ``Invalid``. **Reconcile** re-checks every group.

Reserving and creating take two events: a new group is first written ``Reserved``, and
the SPUs are created when that write comes back. A status write therefore never races
with creates still in flight, and re-running an event once the SPUs exist adds nothing.
"""

from __future__ import annotations

from sc.actions import Action, KvCreate, KvDelete, KvUpdateStatus, ProvisionSpu, TerminateSpu
from sc.controllers.events import Change, ControllerEvent, Reconcile
from sc.controllers.spu_group.policy import conflict, managed_spu, owned_spus
from sc.kv.store import ChangeType
from sc.local_store import StoreView
from spark_stream.models import Spu, SpuGroup, SpuGroupResolution, SpuGroupStatus

__all__ = ["reduce"]


def reduce(store: StoreView, event: ControllerEvent) -> list[Action]:
    """Actions for one event; events about other objects yield none."""
    match event:
        case Change(kind=SpuGroup.kind, type=ChangeType.ADDED | ChangeType.MODIFIED):
            group = store.spu_group(event.name)
            return _reconcile_group(group, store) if group is not None else []
        case Change(kind=Spu.kind, type=ChangeType.DELETED, old=Spu() as spu):
            parent = spu.metadata.parent
            if parent is not None and parent.kind == SpuGroup.kind:
                return [TerminateSpu(spu.spu_id, spu.name, parent.name)]
        case Change(kind=Spu.kind, type=ChangeType.ADDED, new=Spu() as spu):
            if spu.metadata.parent is None:
                return _recheck(store, spu.spu_id)
        case Reconcile():
            actions: list[Action] = []
            for group in store.spu_groups():
                actions += _reconcile_group(group, store)
            return actions
    return []


def _recheck(store: StoreView, spu_id: int) -> list[Action]:
    actions: list[Action] = []
    for group in store.spu_groups():
        if spu_id in group.spec.spu_ids:
            actions += _reconcile_group(group, store)
    return actions


def _reconcile_group(group: SpuGroup, store: StoreView) -> list[Action]:
    reason = conflict(group, store)
    if reason is not None:
        return _status(group, SpuGroupStatus(resolution=SpuGroupResolution.INVALID, reason=reason))
    if group.status.resolution is not SpuGroupResolution.RESERVED or group.status.reason:
        return _status(group, SpuGroupStatus(resolution=SpuGroupResolution.RESERVED))
    actions: list[Action] = []
    owned = owned_spus(group.name, store)
    wanted = group.spec.spu_ids
    for spu_id in wanted:
        if spu_id not in owned:
            spu = managed_spu(group, spu_id)
            actions.append(KvCreate(spu))
            actions.append(ProvisionSpu(spu_id, spu.name, group.name, group.spec.template))
    for spu_id, spu in sorted(owned.items(), reverse=True):
        if spu_id not in wanted:
            actions.append(KvDelete(Spu.kind, spu.name))
    return actions


def _status(group: SpuGroup, status: SpuGroupStatus) -> list[Action]:
    if status == group.status:
        return []
    return [KvUpdateStatus.of(group, status)]
