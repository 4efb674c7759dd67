"""Connection manager bookkeeping without sockets: cache, auth, sessions, pushes, LRS."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import sc.connection_manager as cm_module
import sc.gates as gates_module
from sc.actions import (
    CmAddPartition,
    CmAddSpu,
    CmDeletePartition,
    CmDeleteSpu,
    CmLeaderChange,
    CmUpdatePartition,
    CmUpdateSpu,
)
from sc.connection_manager import ConnectionManager
from sc.controllers.events import LrsUpdate, SpuConnected, SpuDisconnected
from spark_stream.errors import UnauthorizedError
from spark_stream.models import (
    ConsumerGroup,
    ConsumerGroupStatus,
    GroupGrant,
    GroupMember,
    GroupState,
    Partition,
    PartitionSpec,
    PartitionStatus,
    PublicEndpoint,
    Spu,
    SpuResolution,
    SpuSpec,
)
from spark_stream.protocol import Message, UpdateGates
from spark_stream.protocol.control import (
    LrsStatus,
    ReplicaId,
    SpuConnectAccepted,
    UpdateReplicas,
    UpdateSpus,
)
from spark_stream.spu_identity import secret_verifier
from tests.sc.controllers.helpers import OFFLINE, ONLINE, Cluster, make_spu
from tests.sc.sim_spu import run, sim_secret


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def spu(spu_id: int, port: int = 9005) -> Spu:
    spec = SpuSpec(
        spu_id=spu_id,
        public_endpoint=PublicEndpoint(port=port),
        secret_verifier=secret_verifier(sim_secret(spu_id)),
    )
    return Spu.new(f"spu-{spu_id}", spec)


def part(
    name: str, replicas: tuple[int, ...], revision: int = 1, uid: str | None = None, **status: Any
) -> Partition:
    topic, index = name.rsplit("-", 1)
    spec = PartitionSpec(initial_leader=replicas[0], replicas=replicas)
    made = Partition.new(topic, int(index), spec, PartitionStatus(**status)).with_revision(revision)
    return made if uid is None else made.with_uid(uid)


def make_cm(clock: Clock | None = None) -> tuple[ConnectionManager, list[Any], list[int]]:
    events: list[Any] = []
    closed: list[int] = []
    cm = ConnectionManager(2.0, events.append, revision=lambda: 42, clock=clock or Clock())
    for i in (1, 2, 3):
        cm.apply(CmAddSpu(spu(i)))
    cm.apply(CmAddPartition(part("t-0", (1, 2))))
    cm.apply(CmAddPartition(part("t-1", (2, 3))))
    return cm, events, closed


async def take(it: AsyncIterator[Message], n: int) -> list[Message]:
    out = []
    for _ in range(n):
        out.append(await asyncio.wait_for(it.__anext__(), 2))
    return out


def test_only_registered_spus_with_their_own_secret_are_authorized() -> None:
    cm, _, _ = make_cm()
    assert cm.authorize(1, sim_secret(1)).name == "spu-1"
    with pytest.raises(UnauthorizedError, match="^SPU 1: wrong secret"):
        cm.authorize(1, "wrong")
    # SPU 2 claiming SPU 1's id with its own (valid) secret
    with pytest.raises(UnauthorizedError, match="^SPU 1: wrong secret"):
        cm.authorize(1, sim_secret(2))
    with pytest.raises(UnauthorizedError, match="not registered"):
        cm.authorize(99, sim_secret(99))
    cm.apply(CmDeleteSpu(1, "spu-1"))
    with pytest.raises(UnauthorizedError):
        cm.authorize(1, sim_secret(1))


def test_an_spu_registered_without_a_secret_is_refused_saying_so() -> None:
    cm, _, _ = make_cm()
    bare = Spu.new("spu-7", SpuSpec(spu_id=7))
    cm.apply(CmAddSpu(bare))
    with pytest.raises(UnauthorizedError, match="SPU 7 has no secret registered"):
        cm.authorize(7, "anything")


def test_update_spus_carries_pair_keys_and_never_a_verifier() -> None:
    async def body() -> None:
        cm, _, _ = make_cm()
        one = cm.attach(1, lambda: None)
        two = cm.attach(2, lambda: None)
        first = await take(one.pushes(), 2)
        second = await take(two.pushes(), 2)
        push1, push2 = first[1], second[1]
        assert isinstance(push1, UpdateSpus) and isinstance(push2, UpdateSpus)
        keys1, keys2 = push1.peer_key_map(), push2.peer_key_map()
        assert set(keys1) == set(keys2) == {1, 2, 3}
        assert keys1[2] == keys2[1]  # SPUs 1 and 2 share one key
        assert keys1[3] != keys2[3]  # SPU 3's key with 1 is not its key with 2
        assert all("secretVerifier" not in entry["spec"] for entry in push1.spus)

    run(body())


def test_attach_emits_connected_and_detach_disconnected_once() -> None:
    cm, events, _ = make_cm()
    session = cm.attach(1, lambda: None)
    assert events == [SpuConnected(1)]
    assert cm.connected_ids() == {1}
    cm.detach(session, "bye")
    cm.detach(session, "again")
    assert events == [SpuConnected(1), SpuDisconnected(1)]
    assert cm.connected_ids() == frozenset()


def test_second_connection_replaces_the_first_without_going_offline() -> None:
    cm, events, _ = make_cm()
    closed: list[str] = []
    first = cm.attach(2, lambda: closed.append("first"))
    second = cm.attach(2, lambda: closed.append("second"))
    assert closed == ["first"] and not first.active
    cm.detach(first, "replaced")  # the server reports the old connection's end later
    assert events == [SpuConnected(2)]
    assert cm.sessions[2] is second


def test_pushes_start_with_accept_and_full_views_then_coalesced_changes() -> None:
    async def body() -> None:
        cm, _, _ = make_cm()
        session = cm.attach(2, lambda: None)
        pushes = session.pushes()
        accepted, spus, gates, replicas = await take(pushes, 4)
        assert isinstance(gates, UpdateGates) and gates.full and gates.gates == []
        assert accepted == SpuConnectAccepted(2, 2.0, 42)
        assert isinstance(spus, UpdateSpus) and spus.full
        assert [s.spu_id for s in spus.spu_objects()] == [1, 2, 3]
        assert isinstance(replicas, UpdateReplicas) and replicas.full
        assert [r.name for r in replicas.replica_entries()] == ["t-0", "t-1"]
        # Three changes to one partition and one SPU collapse into one push each.
        cm.apply(CmLeaderChange("t-0", 2, (1, 2)))
        cm.apply(CmUpdatePartition(part("t-0", (1, 2), revision=5)))
        cm.apply(CmLeaderChange("t-0", 2, (1, 2)))
        cm.apply(CmUpdateSpu(spu(3, port=7000)))
        first, second = await take(pushes, 2)
        assert isinstance(first, UpdateSpus) and not first.full
        assert [s.spec.public_endpoint.port for s in first.spu_objects()] == [7000]
        assert isinstance(second, UpdateReplicas) and not second.full
        (entry,) = second.replica_entries()
        assert (entry.name, entry.leader, entry.revision) == ("t-0", 2, 5)
        await pushes.aclose()

    run(body())


def test_replica_moves_and_deletes_reach_only_the_spus_concerned() -> None:
    async def body() -> None:
        cm, _, _ = make_cm()
        s1, s3 = cm.attach(1, lambda: None), cm.attach(3, lambda: None)
        p1, p3 = s1.pushes(), s3.pushes()
        await take(p1, 4)
        await take(p3, 4)
        cm.apply(CmUpdatePartition(part("t-0", (2, 3), revision=9)))  # moves off SPU 1
        (to_1,) = await take(p1, 1)
        assert isinstance(to_1, UpdateReplicas) and to_1.deleted == ["t-0"]
        (to_3,) = await take(p3, 1)
        assert isinstance(to_3, UpdateReplicas)
        assert [r.name for r in to_3.replica_entries()] == ["t-0"]
        assert [r.name for r in cm.replicas_of(1)] == []
        cm.apply(CmDeletePartition("t-1", (2, 3), uid="u1"))
        (gone,) = await take(p3, 1)
        assert isinstance(gone, UpdateReplicas) and gone.deleted == ["t-1"]
        assert gone.purge_entries() == [ReplicaId("t-1", "u1")]
        # SPU 1 never held t-1 but may keep storage of it (a replica that moved away):
        # it is told to delete that storage, and nothing about its replicas.
        (to_1,) = await take(p1, 1)
        assert isinstance(to_1, UpdateReplicas) and (to_1.replicas, to_1.deleted) == ([], [])
        assert to_1.purge_entries() == [ReplicaId("t-1", "u1")]
        await p1.aclose()
        await p3.aclose()

    run(body())


def test_a_full_push_purges_the_stored_replicas_whose_partition_is_gone() -> None:
    """An SPU that was away reports its directories: those of partitions deleted (or
    created again) meanwhile are purged, those of live partitions are kept, held or not."""

    async def body() -> None:
        cm, _, _ = make_cm()
        cm.apply(CmAddPartition(part("u-0", (2,), uid="now")))
        stored = [
            ReplicaId("t-0", None),  # held, same incarnation
            ReplicaId("t-1", None),  # live, held elsewhere (moved away): kept
            ReplicaId("u-0", "before"),  # deleted and created again
            ReplicaId("v-0", "old"),  # deleted
        ]
        pushes = cm.attach(1, lambda: None, stored).pushes()
        _, _, _, full = await take(pushes, 4)
        assert isinstance(full, UpdateReplicas) and full.full
        assert [r.name for r in full.replica_entries()] == ["t-0"]
        assert full.purge_entries() == [ReplicaId("u-0", "before"), ReplicaId("v-0", "old")]
        await pushes.aclose()

    run(body())


def test_a_leader_change_keeps_the_partition_uid() -> None:
    """The uid says which incarnation a replica is: losing it would make SPUs empty it."""

    async def body() -> None:
        cm, _, _ = make_cm()
        cm.apply(CmAddPartition(part("u-0", (1, 2), uid="u1")))
        pushes = cm.attach(2, lambda: None).pushes()
        await take(pushes, 4)
        cm.apply(CmLeaderChange("u-0", 2, (1, 2)))
        (push,) = await take(pushes, 1)
        assert isinstance(push, UpdateReplicas)
        (entry,) = push.replica_entries()
        assert (entry.leader, entry.uid) == (2, "u1")
        await pushes.aclose()

    run(body())


def test_replicas_carry_the_leader_epoch_and_a_late_spec_never_rolls_it_back() -> None:
    """The SPUs check fetches against the epoch they were pushed: the full push has the
    stored one, a leader change its new one, and a spec change read from an object older
    than the election keeps the elected leader and epoch."""

    async def body() -> None:
        cm, _, _ = make_cm()
        cm.apply(CmAddPartition(part("u-0", (1, 2), uid="u1", leader=1, leader_epoch=3)))
        pushes = cm.attach(2, lambda: None).pushes()
        _, _, _, full = await take(pushes, 4)
        assert isinstance(full, UpdateReplicas)
        assert [(r.name, r.leader_epoch) for r in full.replica_entries()] == [
            ("t-0", 0),
            ("t-1", 0),
            ("u-0", 3),
        ]
        cm.apply(CmLeaderChange("u-0", 2, (1, 2), 4))
        (push,) = await take(pushes, 1)
        assert isinstance(push, UpdateReplicas)
        assert [(r.leader, r.leader_epoch) for r in push.replica_entries()] == [(2, 4)]
        late = part("u-0", (1, 2), revision=7, uid="u1", leader=1, leader_epoch=3)
        cm.apply(CmUpdatePartition(late))
        (push,) = await take(pushes, 1)
        assert isinstance(push, UpdateReplicas)
        assert [(r.leader, r.leader_epoch, r.revision) for r in push.replica_entries()] == [
            (2, 4, 7)
        ]
        await pushes.aclose()

    run(body())


def test_unregistering_a_connected_spu_closes_it_and_tells_the_others() -> None:
    async def body() -> None:
        cm, _, _ = make_cm()
        closed: list[int] = []
        cm.attach(1, lambda: closed.append(1))
        other = cm.attach(2, lambda: None)
        pushes = other.pushes()
        await take(pushes, 4)
        cm.apply(CmDeleteSpu(1, "spu-1"))
        assert closed == [1]
        (update,) = await take(pushes, 1)
        assert isinstance(update, UpdateSpus) and update.deleted == [1]
        await pushes.aclose()

    run(body())


def test_delete_of_a_stale_name_keeps_the_spu_that_now_holds_the_id() -> None:
    cm, _, _ = make_cm()
    cm.apply(CmDeleteSpu(1, "old-name"))
    assert cm.authorize(1, sim_secret(1)).name == "spu-1"


def test_silent_sessions_expire_after_the_heartbeat_timeout() -> None:
    clock = Clock()
    cm, _, _ = make_cm(clock)
    closed: list[int] = []
    quiet = cm.attach(1, lambda: closed.append(1))
    talky = cm.attach(2, lambda: closed.append(2))
    clock.now += 1.5
    talky.touch()
    clock.now += 1.0
    assert cm.expired() == [quiet]
    assert cm.close_expired() == 1
    assert closed == [1]


def test_a_late_sweep_does_not_count_the_scs_own_stall_as_spu_silence() -> None:
    clock = Clock()
    cm, _, _ = make_cm(clock)  # timeout 2 s: a sweep every 0.5 s
    closed: list[int] = []
    cm.attach(1, lambda: closed.append(1))
    assert cm.close_expired() == 0
    clock.now += 10.0  # the SC's loop was blocked: its heartbeats waited in the socket
    assert cm.close_expired() == 0
    assert closed == []
    # Silence after the stall still counts: dropped once silent 2 s in sweeps on time.
    drops = []
    for _ in range(4):
        clock.now += cm.sweep_interval_s
        drops.append(cm.close_expired())
    assert drops == [0, 0, 0, 1]  # silent 1.0, 1.5, 2.0 (not past), 2.5 s
    assert closed == [1]


def test_lrs_from_the_leader_is_forwarded_once_others_are_rejected() -> None:
    cm, events, _ = make_cm()
    good = LrsStatus("t-0", PartitionStatus(leader=1, leo=5, hw=4))
    not_leader = LrsStatus("t-1", PartitionStatus(leader=1, leo=5, hw=4))
    unknown = LrsStatus("zz-0", PartitionStatus(leader=1))
    accepted, rejected = cm.receive_lrs(1, [good, not_leader, unknown])
    assert (accepted, rejected) == (1, ["t-1", "zz-0"])
    assert events == [LrsUpdate("t-0", 1, (), 5, 4, -1)]
    cm.receive_lrs(1, [good])  # an unchanged repeat is not forwarded again
    assert len(events) == 1
    cm.receive_lrs(1, [LrsStatus("t-0", PartitionStatus(leader=1, leo=6, hw=6))])
    assert events[-1] == LrsUpdate("t-0", 1, (), 6, 6, -1)


def test_lrs_repeat_is_forwarded_again_after_the_leader_reconnects() -> None:
    cm, events, _ = make_cm()
    session = cm.attach(1, lambda: None)
    entry = LrsStatus("t-0", PartitionStatus(leader=1, leo=5, hw=4))
    cm.receive_lrs(1, [entry])
    cm.detach(session)
    cm.attach(1, lambda: None)
    cm.receive_lrs(1, [entry])
    forwarded = [e for e in events if isinstance(e, LrsUpdate)]
    assert forwarded == [LrsUpdate("t-0", 1, (), 5, 4, -1)] * 2


def test_lrs_repeat_is_forwarded_again_once_the_stored_status_changed() -> None:
    cm, events, _ = make_cm()
    entry = LrsStatus("t-0", PartitionStatus(leader=1, leo=5, hw=4))
    cm.receive_lrs(1, [entry])
    cm.receive_lrs(1, [entry])
    assert len(events) == 1  # an unchanged repeat
    cm.forget_reports(["t-1"])  # another partition's status: still a repeat here
    cm.receive_lrs(1, [entry])
    assert len(events) == 1
    cm.forget_reports(["t-0"])
    cm.receive_lrs(1, [entry])
    assert len(events) == 2
    cm.forget_reports()  # a re-list: every partition's
    cm.receive_lrs(1, [entry])
    assert events[1:] == [LrsUpdate("t-0", 1, (), 5, 4, -1)] * 2


def test_a_deposed_leader_is_fenced() -> None:
    cm, events, _ = make_cm()
    cm.apply(CmLeaderChange("t-0", 2, (1, 2)))
    accepted, rejected = cm.receive_lrs(1, [LrsStatus("t-0", PartitionStatus(leader=1))])
    assert (accepted, rejected) == (0, ["t-0"])
    accepted, _ = cm.receive_lrs(2, [LrsStatus("t-0", PartitionStatus(leader=2))])
    assert accepted == 1


def test_lrs_at_another_leader_epoch_is_refused() -> None:
    """The acceptance a leader waits for before shrinking its in-sync set: only at the
    current epoch (a leader deposed and elected again must not pass its old proposal)."""
    cm, _, _ = make_cm()
    cm.apply(CmLeaderChange("t-0", 1, (1, 2), 4))
    old = LrsStatus("t-0", PartitionStatus(leader=1, leader_epoch=3, leo=5, hw=4))
    assert cm.receive_lrs(1, [old]) == (0, ["t-0"])
    current = LrsStatus("t-0", PartitionStatus(leader=1, leader_epoch=4, leo=5, hw=4))
    assert cm.receive_lrs(1, [current]) == (1, [])


def test_unknown_actions_are_refused() -> None:
    cm, _, _ = make_cm()
    with pytest.raises(TypeError):
        cm.apply("nonsense")  # type: ignore[arg-type]


def test_spu_status_changes_reach_every_connected_spu_coalesced() -> None:
    """SPU controller -> KV echo -> ``CmUpdateSpu`` -> one ``UpdateSpus`` entry per SPU.

    Leaders act on an ``Offline`` follower at once, so the status must be pushed; a
    flapping SPU costs a slow reader one push with the latest status, not a backlog.
    """

    async def body() -> None:
        cluster = Cluster(*(make_spu(i, ONLINE) for i in (1, 2, 3)))
        cm = ConnectionManager(2.0, lambda _event: None, revision=lambda: cluster.revision)
        for known in cluster.store.spus():
            cm.apply(CmAddSpu(known))

        def drive(event: Any) -> None:
            for action in cluster.run(event):  # the controllers, with the KV echo
                if isinstance(action, CmAddSpu | CmUpdateSpu | CmDeleteSpu):
                    cm.apply(action)

        def statuses(push: Message) -> dict[int, SpuResolution]:
            assert isinstance(push, UpdateSpus)
            return {s.spu_id: s.status.resolution for s in push.spu_objects()}

        readers = [cm.attach(i, lambda: None).pushes() for i in (1, 2)]
        for pushes in readers:
            await take(pushes, 4)
        drive(SpuDisconnected(3))
        for pushes in readers:
            (update,) = await take(pushes, 1)
            assert isinstance(update, UpdateSpus) and not update.full
            assert statuses(update) == {3: OFFLINE}
        drive(SpuConnected(3))
        drive(SpuDisconnected(3))
        drive(SpuConnected(3))
        drive(SpuDisconnected(3))
        for pushes in readers:
            (update,) = await take(pushes, 1)
            assert statuses(update) == {3: OFFLINE}
        assert cm.sessions[1].pending == cm.sessions[2].pending == 0
        # A session that starts now gets the current statuses in its full push.
        cm.detach(cm.sessions[2])
        fresh = cm.attach(2, lambda: None).pushes()
        _, full, _, _ = await take(fresh, 4)
        assert isinstance(full, UpdateSpus) and full.full
        assert statuses(full) == {1: ONLINE, 2: ONLINE, 3: OFFLINE}
        for pushes in (*readers, fresh):
            await pushes.aclose()

    run(body())


def _reading(name: str, topic: str, generation: int = 1) -> ConsumerGroup:
    member = "0b6c1a3e-6f0d-4f3c-9a51-6f8a1f1b0a01"
    status = ConsumerGroupStatus(
        state=GroupState.STABLE,
        generation=generation,
        group_epoch=generation,
        members=(GroupMember(member_id=member, topics=(topic,)),),
        assignment=(GroupGrant(topic=topic, partition=0, member_id=member, grant_epoch=1),),
    )
    return ConsumerGroup.new(name, status=status).with_revision(generation)


def test_gates_are_recomputed_only_for_the_groups_a_change_concerns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A leader change recomputes the groups reading that topic; a plan change its own
    group (not every group each time); the gates queued are the same as a full pass."""
    computed: list[str] = []
    real = gates_module.group_gates

    def counting(group: ConsumerGroup, partitions: Any) -> Any:
        computed.append(group.name)
        return real(group, partitions)

    monkeypatch.setattr(gates_module, "group_gates", counting)
    monkeypatch.setattr(cm_module, "group_gates", counting, raising=False)
    cm, _, _ = make_cm()
    cm.apply(CmAddPartition(part("u-0", (1, 2))))
    session = cm.attach(1, lambda: None)
    groups = {"on-t": _reading("on-t", "t"), "on-u": _reading("on-u", "u")}
    cm.sync_groups(groups.values())
    assert sorted(computed) == ["on-t", "on-u"]

    computed.clear()
    cm.apply(CmLeaderChange("u-0", 2, (1, 2)))
    assert computed == ["on-u"]
    computed.clear()
    groups["on-t"] = _reading("on-t", "t", generation=2)
    cm.sync_groups(groups.values())
    assert computed == ["on-t"]
    computed.clear()
    cm.sync_groups(groups.values())  # nothing changed
    assert computed == []
    # What SPU 1 was told adds up to what it must hold.
    assert {k: g for view in session.gates_sent.values() for k, g in view.items()} == (
        cm.desired_gates().get(1, {})
    )
