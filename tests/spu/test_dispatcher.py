"""The dispatcher: SC pushes in, leader and follower controllers out, storage kept for a
replica that moves away, deleted for a partition that is deleted or created again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spark_stream.config import load_settings
from spark_stream.errors import (
    FencedLeaderEpochError,
    NotLeaderError,
    UnknownLeaderEpochError,
    UnknownPartitionError,
    UnknownTopicError,
)
from spark_stream.models import PartitionSpec, Spu, SpuResolution, SpuSpec, SpuStatus
from spark_stream.protocol import Acks
from spark_stream.protocol.control import Replica, ReplicaId, UpdateReplicas, UpdateSpus
from spark_stream.records import encode_records
from spu.dispatcher import SpuDispatcher
from spu.settings import SpuSettings
from spu.storage import ReplicaLog, replica_dir
from tests.polling import until
from tests.spu.helpers import run

ME = 1


def rep(
    name: str,
    leader: int | None,
    replicas: tuple[int, ...],
    revision: int = 1,
    uid: str | None = None,
    epoch: int = 0,
    **settings: object,
) -> Replica:
    first = leader if leader is not None else replicas[0]
    spec = PartitionSpec(initial_leader=first, replicas=replicas, **settings)  # type: ignore[arg-type]
    return Replica(name, leader, spec, revision, uid, epoch)


def replica_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


def manager(tmp_path: Path) -> SpuDispatcher:
    settings = load_settings(SpuSettings, id=ME, data_dir=str(tmp_path), replica_max_lag_ms=1000)
    return SpuDispatcher(settings)


def test_controllers_follow_the_specs(tmp_path: Path) -> None:
    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas(
            [
                rep("a-0", ME, (ME, 2)),
                rep("b-0", 2, (2, ME)),
                rep("c-0", 2, (2, ME, 3)),
                rep("d-0", 3, (3, ME)),
            ]
        )
        assert [c.name for c in m.leaders()] == ["a-0"]
        two, three = m.follower(2), m.follower(3)
        assert two is not None and two.replicas == ["b-0", "c-0"]  # one controller per leader
        assert three is not None and three.replicas == ["d-0"]
        assert replica_dirs(tmp_path) == ["a-0", "b-0", "c-0", "d-0"]

        # b-0 moves to this SPU, d-0 is removed: the follower of 3 has nothing left.
        await m.apply_replicas(
            UpdateReplicas.build([rep("b-0", ME, (2, ME), revision=2)], full=False, deleted=["d-0"])
        )
        assert sorted(c.name for c in m.leaders()) == ["a-0", "b-0"]
        assert two.replicas == ["c-0"] and m.follower(3) is None
        assert (tmp_path / "d-0").is_dir() and m.log("d-0") is None  # storage kept

        # A stale incremental entry (older revision) changes nothing.
        await m.apply_replicas(
            UpdateReplicas.build([rep("b-0", 2, (2, ME), revision=1)], full=False)
        )
        assert m.leader("b-0") is not None
        await m.stop()

    run(body)


def test_removed_replica_keeps_its_storage_and_reattaches(tmp_path: Path) -> None:
    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas([rep("a-0", ME, (ME,))])
        leader = m.lookup("a", 0)
        await leader.produce(
            memoryview(encode_records(["x", "y"], producer_id=5, sequence=0)), Acks.ALL, 1000
        )
        await m.set_replicas([])
        assert leader.stopped and m.leader("a-0") is None
        with pytest.raises(NotLeaderError):
            await leader.produce(memoryview(encode_records(["z"])), Acks.LEADER, 1000)
        await m.set_replicas([rep("a-0", ME, (ME,), revision=3)])
        again = m.lookup("a", 0)
        assert again is not leader and again.leo == 2 and again.hw == 2
        retry = await again.produce(
            memoryview(encode_records(["x", "y"], producer_id=5, sequence=0)), Acks.ALL, 1000
        )
        assert retry.base_offset == 0 and again.leo == 2  # producer state rebuilt from the log
        await m.stop()
        assert again.stopped

    run(body)


def test_a_partition_created_again_starts_empty(tmp_path: Path) -> None:
    """Same name, new uid: the old incarnation's records are not attached to the new one,
    even when the new entry replaces the old one in a single push (no delete between)."""

    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas([rep("a-0", ME, (ME,), uid="first")])
        produced = await m.lookup("a", 0).produce(
            memoryview(encode_records(["x", "y"])), Acks.ALL, 1000
        )
        assert produced.base_offset == 0 and m.lookup("a", 0).leo == 2
        await m.apply_replicas(
            UpdateReplicas.build([rep("a-0", ME, (ME,), revision=9, uid="second")], full=False)
        )
        again = m.lookup("a", 0)
        assert (again.leo, again.hw) == (0, 0)
        assert m.stored_replicas() == [ReplicaId("a-0", "second")]
        await m.stop()
        # The SPU restarts with the first incarnation's entry (it missed the delete): the
        # directory holds the second one, so the first starts empty too.
        restarted = manager(tmp_path)
        await restarted.set_replicas([rep("a-0", ME, (ME,), uid="first")])
        assert restarted.lookup("a", 0).leo == 0
        await restarted.stop()

    run(body)


def test_a_purge_deletes_the_storage_of_that_incarnation_only(tmp_path: Path) -> None:
    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas([rep("a-0", ME, (ME,), uid="u1"), rep("b-0", ME, (ME,), uid="u1")])
        await m.lookup("a", 0).produce(memoryview(encode_records(["x"])), Acks.ALL, 1000)
        # a-0 moves away: its storage stays, and is listed for the SC.
        await m.set_replicas([rep("b-0", ME, (ME,), uid="u1")])
        assert (tmp_path / "a-0").is_dir()
        assert m.stored_replicas() == [ReplicaId("a-0", "u1"), ReplicaId("b-0", "u1")]
        # A purge of another incarnation of a-0 leaves this one alone.
        await m.apply_replicas(UpdateReplicas.build([], full=False, purge=[ReplicaId("a-0", "u0")]))
        assert (tmp_path / "a-0").is_dir()
        # Its own purge deletes it; b-0 is purged while held and led: dropped, deleted.
        purge = [ReplicaId("a-0", "u1"), ReplicaId("b-0", "u1")]
        await m.apply_replicas(UpdateReplicas.build([], full=False, purge=purge))
        assert replica_dirs(tmp_path) == [] and m.leader("b-0") is None
        with pytest.raises(UnknownTopicError):
            m.lookup("b", 0)
        await m.stop()

    run(body)


def test_stored_replicas_lists_only_replica_directories(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "Not_A_Topic-0").mkdir()
    (tmp_path / "c-3").mkdir()
    (tmp_path / "c-4").write_text("a file")
    assert manager(tmp_path).stored_replicas() == [ReplicaId("c-3", None)]


def test_lookup_says_why_there_is_no_leader(tmp_path: Path) -> None:
    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas([rep("a-0", 2, (2, ME)), rep("b-0", None, (2, ME))])
        with pytest.raises(NotLeaderError, match="leader: 2"):
            m.lookup("a", 0)
        with pytest.raises(NotLeaderError, match="leader: None"):
            m.lookup("b", 0)
        assert m.follower(2) is not None and m.follower(2).replicas == ["a-0"]  # type: ignore[union-attr]
        with pytest.raises(UnknownPartitionError):
            m.lookup("a", 1)
        with pytest.raises(UnknownTopicError):
            m.lookup("zzz", 0)
        await m.stop()

    run(body)


def test_lookup_checks_the_leader_epoch_before_leadership(tmp_path: Path) -> None:
    """KIP-320: an older epoch is fenced and a newer one unknown, on the leader and on a
    deposed leader alike; -1 (an old client) is not checked."""

    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas([rep("a-0", ME, (ME, 2), epoch=3)])
        assert m.lookup("a", 0, 3) is m.lookup("a", 0) is m.lookup("a", 0, -1)
        with pytest.raises(FencedLeaderEpochError, match="epoch 2 is fenced"):
            m.lookup("a", 0, 2)
        with pytest.raises(UnknownLeaderEpochError, match="epoch 4 is not known"):
            m.lookup("a", 0, 4)
        # Deposed: SPU 2 leads at epoch 4; this SPU follows and knows it.
        await m.apply_replicas(UpdateReplicas.build([rep("a-0", 2, (ME, 2), epoch=4)], full=False))
        assert m.leader("a-0") is None
        with pytest.raises(FencedLeaderEpochError):
            m.lookup("a", 0, 3)
        with pytest.raises(NotLeaderError):
            m.lookup("a", 0, 4)
        with pytest.raises(NotLeaderError):
            m.lookup("a", 0)
        await m.stop()

    run(body)


def test_an_entry_from_before_an_election_is_ignored(tmp_path: Path) -> None:
    """A late incremental push of an older epoch (same revision, same incarnation) must
    not hand leadership back to a deposed leader."""

    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas([rep("a-0", 2, (ME, 2), epoch=4)])
        await m.apply_replicas(UpdateReplicas.build([rep("a-0", ME, (ME, 2), epoch=3)], full=False))
        assert m.leader("a-0") is None
        held = m.replica("a-0")
        assert held is not None and (held.leader, held.leader_epoch) == (2, 4)
        # A new incarnation (another uid) starts again at 0.
        await m.apply_replicas(
            UpdateReplicas.build([rep("a-0", ME, (ME, 2), uid="u2", epoch=0)], full=False)
        )
        assert m.leader("a-0") is not None
        await m.stop()

    run(body)


def test_one_log_that_cannot_open_keeps_the_others_up(tmp_path: Path) -> None:
    """A replica whose log fails to open gets no controller; the other replicas run, and
    it is retried on the next push."""

    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas([rep("b-0", 2, (2, ME))])
        assert m.follower(2) is not None
        held = ReplicaLog.open(replica_dir(tmp_path, "a", 0))  # holds a-0's directory lock
        held_c = ReplicaLog.open(replica_dir(tmp_path, "c", 0))
        # b-0 leaves; a-0 (led here) and c-0 (led by 2) cannot open; d-0 can.
        await m.set_replicas(
            [rep("a-0", ME, (ME, 2)), rep("c-0", 2, (2, ME)), rep("d-0", ME, (ME,))]
        )
        assert m.log("a-0") is None and m.leader("a-0") is None
        with pytest.raises(NotLeaderError, match="^SPU 1 does not serve a-0 as its leader yet$"):
            m.lookup("a", 0)  # its leader here, not serving (a client retries)
        assert m.log("c-0") is None and m.follower(2) is None  # its last replica left
        assert [c.name for c in m.leaders()] == ["d-0"]
        held.close()
        held_c.close()
        await m.set_replicas(
            [rep("a-0", ME, (ME, 2)), rep("c-0", 2, (2, ME)), rep("d-0", ME, (ME,))]
        )
        assert sorted(c.name for c in m.leaders()) == ["a-0", "d-0"]
        follower = m.follower(2)
        assert follower is not None and follower.replicas == ["c-0"]
        await m.stop()

    run(body)


def spu_with(spu_id: int, resolution: SpuResolution) -> Spu:
    return Spu.new(f"spu-{spu_id}", SpuSpec(spu_id=spu_id), SpuStatus(resolution=resolution))


def test_the_event_loop_runs_while_a_big_push_opens_its_replicas(tmp_path: Path) -> None:
    """Opening replicas (files, fsyncs) happens off the loop: the SPU's other tasks (its
    heartbeats to the SC) run meanwhile. Before, a push of 1,000 replicas held the loop
    until every log was open, and the SC dropped the SPU."""

    async def body() -> None:
        m = manager(tmp_path)
        count = 200
        seen: set[int] = set()
        done = asyncio.Event()

        async def watch() -> None:  # another task on the loop, as the heartbeats are
            while not done.is_set():
                seen.add(len(m.logs()))
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        await m.set_replicas([rep(f"t-{i}", ME, (ME,)) for i in range(count)])
        done.set()
        await watcher
        assert len(m.logs()) == count
        assert any(0 < n < count for n in seen), sorted(seen)  # ran between the opens
        await m.stop()

    run(body)


def test_a_push_cancelled_while_its_replicas_open_leaves_none_locked(tmp_path: Path) -> None:
    """The SC link's task is cancelled when its connection ends, possibly mid-push: the
    logs already opening in threads are registered anyway, so the next push opens the
    rest instead of finding directories whose lock a lost log still holds."""

    async def body() -> None:
        m = manager(tmp_path)
        replicas = [rep(f"t-{i}", ME, (ME,)) for i in range(200)]
        push = asyncio.create_task(m.set_replicas(replicas))
        await until(m.logs, within=60.0, what="a first log open")
        push.cancel()
        with pytest.raises(asyncio.CancelledError):
            await push
        assert 0 < len(m.logs()) < len(replicas)
        await m.set_replicas(replicas)  # the push again, after the reconnect
        assert len(m.logs()) == len(replicas)
        await m.stop()

    run(body)


def test_an_offline_push_evicts_the_follower_at_once_and_releases_acks_all(
    tmp_path: Path,
) -> None:
    """The SC's ``UpdateSpus`` saying a follower's SPU is ``Offline`` shrinks the in-sync set
    now: a waiting ``acks=all`` produce completes without waiting ``replica_max_lag_ms``."""

    async def body() -> None:
        settings = load_settings(
            SpuSettings, id=ME, data_dir=str(tmp_path), replica_max_lag_ms=600_000
        )  # the lag alone evicts nobody here
        m = SpuDispatcher(settings)
        await m.set_replicas([rep("a-0", ME, (ME, 2, 3), min_in_sync_replicas=2)])
        leader = m.leader("a-0")
        assert leader is not None and leader.in_sync == {ME, 2, 3}
        appended = asyncio.Event()
        leader.subscribe(appended)
        waiting = asyncio.create_task(
            leader.produce(memoryview(encode_records(["x"])), Acks.ALL, 60_000)
        )
        await asyncio.wait_for(appended.wait(), 5)  # appended; now it waits for the HW
        assert leader.leo == 1
        assert leader.follower_report(3, 1)  # SPU 3 caught up; SPU 2 is silent (dead)
        assert leader.hw == 0 and not waiting.done()

        await m.apply_spus(UpdateSpus.build([spu_with(2, SpuResolution.OFFLINE)], full=False))
        assert leader.in_sync == {ME, 3}
        reply = await asyncio.wait_for(waiting, 5)
        assert (reply.base_offset, reply.hw) == (0, 1)

        # Online again: SPU 2 rejoins once it reports caught up to the high watermark.
        await m.apply_spus(UpdateSpus.build([spu_with(2, SpuResolution.ONLINE)], full=False))
        assert leader.in_sync == {ME, 3}
        assert leader.follower_report(2, 1)
        assert leader.in_sync == {ME, 2, 3}
        await m.stop()

    run(body)


def test_replica_metadata_is_kept_next_to_the_data_and_reported(tmp_path: Path) -> None:
    """Once the store's identity is known, each open replica's entry is written to its
    directory (again when it changes: an election), and ``stored_meta`` reports it."""

    async def body() -> None:
        m = manager(tmp_path)
        await m.set_replicas([rep("a-0", ME, (ME, 2), uid="u1")])
        assert not (tmp_path / "a-0" / "replica.json").exists()  # no store known yet
        m.store_id = "s1"
        await m.set_replicas([rep("a-0", ME, (ME, 2), uid="u1")])
        (kept,) = m.stored_meta()
        assert (kept.store_id, kept.replica.uid, kept.replica.leader_epoch) == ("s1", "u1", 0)
        await m.set_replicas([rep("a-0", 2, (ME, 2), revision=2, uid="u1", epoch=1)])
        (kept,) = m.stored_meta()
        assert (kept.replica.leader, kept.replica.leader_epoch, kept.replica.revision) == (2, 1, 2)
        await m.stop()

    run(body)
