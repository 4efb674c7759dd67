"""SPU group controller: Init/Invalid/Reserved, scale up and down, id range conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from sc.actions import Action, KvCreate, KvDelete, KvUpdateStatus, ProvisionSpu, TerminateSpu
from sc.controllers import Reconcile
from sc.controllers.spu_group import reduce
from sc.controllers.spu_group.policy import managed_spu
from sc.local_store import LocalStore
from spark_stream.models import (
    KvObject,
    Spu,
    SpuGroup,
    SpuGroupResolution,
    SpuGroupStatus,
    SpuTemplate,
    SpuType,
)
from tests.sc.controllers.helpers import (
    Cluster,
    added,
    deleted,
    kv_actions,
    make_group,
    make_spu,
    modified,
)

G = SpuGroupResolution
TEMPLATE = SpuTemplate(rack="zone-a", public_port=9100, private_port=9200)


def _group(replicas: int, resolution: G = G.RESERVED, *, name: str = "main", **kw: Any) -> SpuGroup:
    return make_group(name, replicas, 11, resolution=resolution, template=TEMPLATE, **kw)


def _spus(group: SpuGroup, *ids: int) -> list[Spu]:
    return [managed_spu(group, i).with_revision(1) for i in ids]


def _status(group: SpuGroup, resolution: G, reason: str | None = None) -> KvUpdateStatus:
    status = SpuGroupStatus(resolution=resolution, reason=reason)
    return KvUpdateStatus("SpuGroup", group.name, status, group.revision)


def _create(group: SpuGroup, *ids: int) -> list[Action]:
    actions: list[Action] = []
    for spu_id in ids:
        spu = managed_spu(group, spu_id)
        actions += [KvCreate(spu), ProvisionSpu(spu_id, spu.name, group.name, TEMPLATE)]
    return actions


INIT2 = _group(2, G.INIT)
RES2 = _group(2)
RES4 = _group(4)
RES1 = _group(1)
CUSTOM12 = make_spu(12, name="edge-12")
TAKEN = "SPU id 12 is already used by custom SPU 'edge-12'"
OTHER = make_group("other", 3, 12, resolution=G.RESERVED)
OVERLAP = "SPU ids 12..12 overlap SPU group 'other'"
EARLY = make_group("early", 3, 12)  # Init, sorts before "main"
LATE = make_group("zzz", 3, 12)  # Init, sorts after "main"
INVALID = _group(2, G.INVALID, reason=TAKEN)

ROWS: list[tuple[str, list[KvObject[Any, Any]], Any, list[Action]]] = [
    ("new group, free ids: Reserved", [INIT2], added(INIT2), [_status(INIT2, G.RESERVED)]),
    ("Reserved comes back: provision minId..minId+replicas-1", [RES2], modified(INIT2, RES2),
     _create(RES2, 11, 12)),
    ("all SPUs exist: nothing", [RES2, *_spus(RES2, 11, 12)], modified(RES2, RES2), []),
    ("scale up: provision the new ids", [RES4, *_spus(RES2, 11, 12)], modified(RES2, RES4),
     _create(RES4, 13, 14)),
    ("scale down: the highest ids go", [RES1, *_spus(RES4, 11, 12, 13)], modified(RES4, RES1),
     [KvDelete("Spu", "main-13"), KvDelete("Spu", "main-12")]),
    ("managed SPU deleted: terminate it", [RES1], deleted(_spus(RES2, 12)[0]),
     [TerminateSpu(12, "main-12", "main")]),
    ("custom SPU deleted: nothing to terminate", [RES1], deleted(CUSTOM12), []),
    ("custom SPU in the range: Invalid", [INIT2, CUSTOM12], added(INIT2),
     [_status(INIT2, G.INVALID, TAKEN)]),
    ("still conflicting: nothing", [INVALID, CUSTOM12], modified(INVALID, INVALID), []),
    ("conflict gone: Reserved", [INVALID], modified(INVALID, INVALID),
     [_status(INVALID, G.RESERVED)]),
    ("custom SPU registered later inside a Reserved range: Invalid",
     [RES2, *_spus(RES2, 11), CUSTOM12], added(CUSTOM12), [_status(RES2, G.INVALID, TAKEN)]),
    ("overlap with a Reserved group: Invalid", [INIT2, OTHER], added(INIT2),
     [_status(INIT2, G.INVALID, OVERLAP)]),
    ("overlap with an Init group of smaller name: Invalid", [INIT2, EARLY], added(INIT2),
     [_status(INIT2, G.INVALID, "SPU ids 12..12 overlap SPU group 'early'")]),
    ("overlap with an Init group of larger name: Reserved", [INIT2, LATE], added(INIT2),
     [_status(INIT2, G.RESERVED)]),
    ("a Reserved group keeps ids an Init group wants", [RES2, EARLY], modified(RES2, RES2),
     _create(RES2, 11, 12)),
    ("an Invalid group claims nothing", [INIT2, make_group("bad", 3, 12, resolution=G.INVALID)],
     added(INIT2), [_status(INIT2, G.RESERVED)]),
    ("ids owned by another group: Invalid", [INIT2, OTHER, *_spus(OTHER, 12)], added(INIT2),
     [_status(INIT2, G.INVALID, "SPU id 12 is already used by SPU 'other-12' of SPU group "
      "'other'")]),
    ("template ports past 65535: Invalid",
     [bad := make_group("ports", 3, 1, template=SpuTemplate(public_port=65534))], added(bad),
     [_status(bad, G.INVALID, "template publicPort 65534 + 2 passes 65535")]),
    ("zero replicas: Reserved, nothing to provision", [_group(0)], modified(_group(0), _group(0)),
     []),
    ("group deleted: its SPUs' deletions terminate them", [], deleted(RES2), []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("objects", "event", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_spu_group_reducer(
    objects: list[KvObject[Any, Any]], event: Any, expected: list[Action]
) -> None:
    assert reduce(LocalStore.of(objects), event) == expected


def test_managed_spu_is_built_from_the_template() -> None:
    spu = managed_spu(RES2, 12)
    assert spu.name == "main-12"
    assert spu.spec.spu_id == 12
    assert spu.spec.spu_type is SpuType.MANAGED
    assert spu.spec.rack == "zone-a"
    assert (spu.spec.public_endpoint.port, spu.spec.private_endpoint.port) == (9101, 9201)
    assert spu.metadata.parent is not None
    assert (spu.metadata.parent.kind, spu.metadata.parent.name) == ("SpuGroup", "main")


def test_overlapping_groups_have_exactly_one_winner() -> None:
    a = make_group("a", 3, 10)
    b = make_group("b", 3, 12)
    store = LocalStore.of([a, b])
    outcomes = {g.name: reduce(store, added(g)) for g in (a, b)}
    assert outcomes["a"] == [_status(a, G.RESERVED)]
    assert outcomes["b"] == [_status(b, G.INVALID, "SPU ids 12..12 overlap SPU group 'a'")]


def test_group_lifecycle_end_to_end() -> None:
    cluster = Cluster()
    emitted = cluster.run(cluster.put(_group(3, G.INIT)))
    group = cluster.store.spu_group("main")
    assert group is not None and group.status.resolution is G.RESERVED
    assert [s.spu_id for s in cluster.store.spus()] == [11, 12, 13]
    assert sorted(a.spu_id for a in emitted if isinstance(a, ProvisionSpu)) == [11, 12, 13]
    # restart: replaying the listing and a reconcile provisions nothing more
    replay = [added(o) for k in ("SpuGroup", "Spu") for o in cluster.store.objects(k)]
    again = cluster.run(*replay, Reconcile())
    assert kv_actions(again) == [] and not any(isinstance(a, ProvisionSpu) for a in again)
    # scale down to 1: 13 and 12 are deleted, then terminated
    emitted = cluster.run(
        cluster.put(group.with_spec(group.spec.model_copy(update={"replicas": 1})))
    )
    assert [a.spu_id for a in emitted if isinstance(a, TerminateSpu)] == [13, 12]
    assert [s.spu_id for s in cluster.store.spus()] == [11]
    # delete the group: the store removes its SPU with it, and the SPU is terminated
    emitted = cluster.run(*cluster.remove("SpuGroup", "main"))
    assert [a.spu_id for a in emitted if isinstance(a, TerminateSpu)] == [11]
    assert cluster.store.spus() == []
