"""The leader's side of a replication stream, driven without a socket."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spark_stream.errors import InvalidRequestError, NotLeaderError
from spark_stream.models import PartitionSpec
from spark_stream.protocol import Acks, as_buffer
from spark_stream.protocol.control import Replica
from spark_stream.records import decode_frames, encode_records
from spu.follower_session import FollowerSession
from spu.leader import LeaderController
from spu.private_messages import FollowerPush, FollowerStreamRequest, ReplicaOffsets
from spu.storage import ReplicaLog

LEADER, FOLLOWER = 1, 2


class Directory:
    """The two methods a session needs from the dispatcher, over a dict."""

    def __init__(self) -> None:
        self.leaders: dict[str, LeaderController] = {}
        self.events: set[asyncio.Event] = set()

    def leader(self, name: str) -> LeaderController | None:
        return self.leaders.get(name)

    def subscribe_roles(self, event: asyncio.Event) -> None:
        self.events.add(event)

    def unsubscribe_roles(self, event: asyncio.Event) -> None:
        self.events.discard(event)

    def changed(self) -> None:
        for event in self.events:
            event.set()


def joined(push: FollowerPush) -> bytes:
    """The push's tail as bytes (in process it is still the list of log views)."""
    tail = push.tail
    if isinstance(tail, bytes | bytearray | memoryview):
        return bytes(tail)
    return b"".join(as_buffer(part) for part in tail)


def make_leader(log: ReplicaLog) -> LeaderController:
    spec = PartitionSpec(initial_leader=LEADER, replicas=(LEADER, FOLLOWER))
    leader = LeaderController(
        Replica("t-0", LEADER, spec, 1),
        log,
        spu_id=LEADER,
        max_lag_ms=10_000,
        max_batch_bytes=1 << 20,
    )
    leader.start()
    return leader


def test_session_waits_for_the_leader_syncs_replicates_and_gives_up(tmp_path: Path) -> None:
    async def body() -> None:
        directory = Directory()
        session = FollowerSession(directory, FOLLOWER, {"t-0": ReplicaOffsets(0, 0)}, 1 << 20)
        pushes = session.pushes()
        first = asyncio.ensure_future(anext(pushes))
        await asyncio.sleep(0.01)  # give the session a chance to (wrongly) push early
        assert not first.done()  # not the leader yet: the session waits silently
        with ReplicaLog.open(tmp_path / "t-0") as log:
            log.append_produced(encode_records(["early"]))
            leader = make_leader(log)
            directory.leaders["t-0"] = leader
            directory.changed()
            sync = await first
            assert isinstance(sync, FollowerPush)
            assert (sync.name, sync.truncate_to, sync.reset) == ("t-0", 0, False)
            data = await anext(pushes)
            assert [b.column("value").to_pylist() for b in decode_frames(joined(data))] == [
                [b"early"]
            ]
            nxt = asyncio.ensure_future(anext(pushes))
            await leader.produce(memoryview(encode_records(["later"])), Acks.LEADER, 1000)
            pushed = await nxt
            assert pushed.leo == 2 and decode_frames(joined(pushed))[0].num_rows == 1
            assert leader.follower_report(FOLLOWER, 2)  # HW moves: an offsets-only push
            moved = await anext(pushes)
            assert moved.hw == 2 and not joined(moved)
            await leader.stop()
            directory.changed()
            gone = await anext(pushes)
            assert gone.error == NotLeaderError.code
            await pushes.aclose()
            assert not directory.events

    asyncio.run(asyncio.wait_for(body(), 20))


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ("nope", "expected a map"),
        ({"leo": -1, "start": 0}, "leo must be"),
        ({"leo": 3, "start": 5}, "past its LEO"),
        ({"leo": 3, "start": 0, "tail": [[1]]}, "bad pair"),
        ({"leo": 3, "start": 0, "tail": [[1, 2]] * 2000}, "at most"),
    ],
)
def test_follower_stream_request_validates_replica_offsets(entry: object, match: str) -> None:
    request = FollowerStreamRequest(FOLLOWER, {"t-0": entry})
    with pytest.raises(InvalidRequestError, match=match):
        request.offsets()


def test_replica_offsets_round_trip() -> None:
    offsets = ReplicaOffsets(9, 4, ((4, 123), (7, 456)))
    request = FollowerStreamRequest.build(FOLLOWER, {"t-0": offsets})
    decoded = FollowerStreamRequest.from_meta(request.to_meta())
    assert decoded.offsets() == {"t-0": offsets}


def test_replica_offsets_carry_a_repair_point_and_refuse_a_bad_one() -> None:
    offsets = ReplicaOffsets(3, 3, (), repair_from=3)
    request = FollowerStreamRequest.build(FOLLOWER, {"t-0": offsets})
    decoded = FollowerStreamRequest.from_meta(request.to_meta())
    assert decoded.offsets() == {"t-0": offsets}
    assert "repair" not in ReplicaOffsets(3, 3).to_wire()  # absent unless repairing
    bad = FollowerStreamRequest(FOLLOWER, {"t-0": {"leo": 3, "start": 3, "repair": -1}})
    with pytest.raises(InvalidRequestError, match="repair must be an integer"):
        bad.offsets()


def test_a_high_watermark_only_push_lets_the_readers_it_woke_go_first(tmp_path: Path) -> None:
    """Work the same HW move queued after the session's wake-up (a consumer's stream
    woken by it) runs before the follower's offsets-only push is made: the follower's HW
    may lag one loop turn, a consumer's committed record not."""

    async def body() -> None:
        directory = Directory()
        session = FollowerSession(directory, FOLLOWER, {"t-0": ReplicaOffsets(0, 0)}, 1 << 20)
        pushes = session.pushes()
        with ReplicaLog.open(tmp_path / "t-0") as log:
            leader = make_leader(log)
            directory.leaders["t-0"] = leader
            directory.changed()
            await anext(pushes)  # sync
            await leader.produce(memoryview(encode_records(["a"])), Acks.LEADER, 1000)
            await anext(pushes)  # the frame
            pending = asyncio.ensure_future(anext(pushes))
            await asyncio.sleep(0)  # the session waits for a change
            pushed_first: list[bool] = []
            assert leader.follower_report(FOLLOWER, 1)  # the HW moves: the session wakes
            asyncio.get_running_loop().call_soon(lambda: pushed_first.append(pending.done()))
            moved = await pending
            assert moved.hw == 1 and not joined(moved)
            assert pushed_first == [False]
            await pushes.aclose()
            await leader.stop()

    asyncio.run(asyncio.wait_for(body(), 20))
