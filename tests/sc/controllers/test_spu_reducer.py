"""SPU controller: one row per bullet of the seed's "SPU Controller" section, and more."""

from __future__ import annotations

from typing import Any

import pytest

from sc.actions import Action, CmAddSpu, CmDeleteSpu, CmUpdateSpu, KvUpdateStatus
from sc.controllers import Reconcile, SpuConnected, SpuDisconnected
from sc.controllers.spu import reduce
from sc.local_store import LocalStore
from spark_stream.models import KvObject, SpuResolution, SpuSpec, SpuStatus
from tests.sc.controllers.helpers import (
    OFFLINE,
    ONLINE,
    added,
    deleted,
    make_spu,
    make_topic,
    modified,
)

S1 = make_spu(1, OFFLINE)
S1_ON = make_spu(1, ONLINE)
S2 = make_spu(2, ONLINE)
S3_INIT = make_spu(3, SpuResolution.INIT)
S1_MOVED = S1.with_spec(SpuSpec(spu_id=1, rack="zone-b")).with_revision(2)
S1_STATUS_ONLY = S1.with_status(SpuStatus(resolution=ONLINE)).with_revision(2)
S2_OFFLINE = S2.with_status(SpuStatus(resolution=OFFLINE)).with_revision(2)
S1_RELABELLED = S1.with_revision(3)


def _status(spu: Any, resolution: SpuResolution) -> KvUpdateStatus:
    return KvUpdateStatus("Spu", spu.name, SpuStatus(resolution=resolution), spu.revision)


ROWS: list[tuple[str, list[KvObject[Any, Any]], Any, list[Action]]] = [
    # seed: "Add SPU -> action to add SPU to the Connection Manager"
    ("add SPU", [S1], added(S1), [CmAddSpu(S1)]),
    # seed: "Modify SPU -> action to update SPU in the Connection Manager"
    ("modify SPU spec", [S1_MOVED], modified(S1, S1_MOVED), [CmUpdateSpu(S1_MOVED)]),
    # Our own Online/Offline write coming back: the SPUs must hear of it (a leader
    # evicts an Offline follower from its in-sync set at once).
    ("status change: pushed to the SPUs", [S1_STATUS_ONLY],
     modified(S1, S1_STATUS_ONLY), [CmUpdateSpu(S1_STATUS_ONLY)]),
    ("going Offline: pushed to the SPUs", [S2_OFFLINE], modified(S2, S2_OFFLINE),
     [CmUpdateSpu(S2_OFFLINE)]),
    ("neither spec nor status changed: nothing", [S1_RELABELLED],
     modified(S1, S1_RELABELLED), []),
    # seed: "Delete SPU -> action to delete SPU from the Connection Manager"
    ("delete SPU", [], deleted(S1), [CmDeleteSpu(1, "spu-1")]),
    # seed: "Online/Offline -> action to update SPU resolution status in the KV store"
    ("connection up: Online", [S1], SpuConnected(1), [_status(S1, ONLINE)]),
    ("connection down: Offline", [S2], SpuDisconnected(2), [_status(S2, OFFLINE)]),
    ("first connection of an Init SPU: Online", [S3_INIT], SpuConnected(3),
     [_status(S3_INIT, ONLINE)]),
    ("already Online: nothing", [S2], SpuConnected(2), []),
    ("already Offline: nothing", [S1], SpuDisconnected(1), []),
    ("unknown SPU: nothing", [S1], SpuConnected(9), []),
    ("reconcile with the connected set", [S1, S2, S3_INIT], Reconcile(connected=frozenset({1})),
     [_status(S1, ONLINE), _status(S2, OFFLINE)]),
    ("reconcile without connection facts: nothing", [S1, S2], Reconcile(), []),
    ("topic events are not ours", [S1], added(make_topic("t")), []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("objects", "event", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_spu_reducer(objects: list[KvObject[Any, Any]], event: Any, expected: list[Action]) -> None:
    assert reduce(LocalStore.of(objects), event) == expected


def test_status_write_is_idempotent() -> None:
    store = LocalStore.of([S1_ON.with_revision(5)])
    assert reduce(store, SpuConnected(1)) == []
    assert reduce(store, Reconcile(connected=frozenset({1}))) == []
