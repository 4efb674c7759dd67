"""SPU group policy: which ids a group may claim, and the SPUs it owns.

A managed SPU is an SPU object named ``{group}-{id}`` whose ``metadata.parent`` is its
group, so the KV store removes a group's SPUs with the group. A group's id range
``minId .. minId + replicas - 1`` conflicts when:

1. an SPU the group does not own already has an id in the range (a custom SPU, or a
   managed SPU of another group);
2. it overlaps another valid group's range where neither has SPUs yet. The tie goes
   to the group that is already ``Reserved``, then to the smaller name; each overlap
   thus has exactly one winner, whichever group is evaluated first.

A group owning SPUs in an overlap keeps it (the other group meets rule 1).
"""

from __future__ import annotations

from sc.local_store import StoreView
from spark_stream.models import (
    MAX_SPU_ID,
    ObjectRef,
    PrivateEndpoint,
    PublicEndpoint,
    Spu,
    SpuGroup,
    SpuGroupResolution,
    SpuSpec,
    SpuType,
)

__all__ = ["owner_ref", "owned_spus", "managed_spu_name", "managed_spu", "conflict"]

_MAX_PORT = 65535


def owner_ref(group: str) -> ObjectRef:
    """The parent reference a managed SPU of ``group`` carries."""
    return ObjectRef(kind=SpuGroup.kind, name=group)


def owned_spus(group: str, store: StoreView) -> dict[int, Spu]:
    """The group's managed SPUs, by SPU id."""
    ref = owner_ref(group)
    return {spu.spu_id: spu for spu in store.spus() if spu.metadata.parent == ref}


def managed_spu_name(group: str, spu_id: int) -> str:
    """The name of ``group``'s managed SPU with id ``spu_id``."""
    return f"{group}-{spu_id}"


def managed_spu(group: SpuGroup, spu_id: int) -> Spu:
    """The SPU object for id ``spu_id`` of ``group``, built from the group's template.

    Template ports are bases: the SPU at ``minId + k`` listens on ``port + k``, so a
    group of local processes does not collide; without them the defaults apply and the
    provisioner sets the real endpoints.
    """
    template = group.spec.template
    offset = spu_id - group.spec.min_id
    public = PublicEndpoint()
    private = PrivateEndpoint()
    if template.public_port is not None:
        public = PublicEndpoint(port=template.public_port + offset)
    if template.private_port is not None:
        private = PrivateEndpoint(port=template.private_port + offset)
    spec = SpuSpec(
        spu_id=spu_id,
        spu_type=SpuType.MANAGED,
        rack=template.rack,
        public_endpoint=public,
        private_endpoint=private,
    )
    return Spu.build(managed_spu_name(group.name, spu_id), spec, parent=owner_ref(group.name))


def conflict(group: SpuGroup, store: StoreView) -> str | None:
    """Why ``group`` cannot hold its id range, or ``None`` when it can."""
    ids = group.spec.spu_ids
    if not ids:
        return None
    problem = _port_problem(group)
    if problem:
        return problem
    ref = owner_ref(group.name)
    for spu in store.spus():
        if spu.spu_id in ids and spu.metadata.parent != ref:
            return f"SPU id {spu.spu_id} is already used by {_describe(spu)}"
    mine = set(owned_spus(group.name, store))
    reserved = group.status.resolution is SpuGroupResolution.RESERVED
    for other in store.spu_groups():
        if other.name == group.name or other.status.resolution is SpuGroupResolution.INVALID:
            continue
        lo = max(ids.start, other.spec.spu_ids.start)
        hi = min(ids.stop, other.spec.spu_ids.stop)
        if lo >= hi or mine.intersection(range(lo, hi)):
            continue
        other_reserved = other.status.resolution is SpuGroupResolution.RESERVED
        # A reserved group beats an unreserved one; between equals, the smaller name.
        if (other_reserved, group.name) > (reserved, other.name):
            return f"SPU ids {lo}..{hi - 1} overlap SPU group {other.name!r}"
    return None


def _describe(spu: Spu) -> str:
    parent = spu.metadata.parent
    if parent is not None and parent.kind == SpuGroup.kind:
        return f"SPU {spu.name!r} of SPU group {parent.name!r}"
    return f"{spu.spec.spu_type.value.lower()} SPU {spu.name!r}"


def _port_problem(group: SpuGroup) -> str | None:
    template = group.spec.template
    last = group.spec.replicas - 1
    ports = (("publicPort", template.public_port), ("privatePort", template.private_port))
    for label, port in ports:
        if port is not None and port + last > _MAX_PORT:
            return f"template {label} {port} + {last} passes {_MAX_PORT}"
    if group.spec.min_id + last > MAX_SPU_ID:  # the model checks it too
        return f"SPU ids pass {MAX_SPU_ID}"
    return None
