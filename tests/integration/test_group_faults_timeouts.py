"""Members that stop without leaving: the session timeout and the rebalance timeout (T5,
T6 of the brief), with real processes and the SC's short test timeouts (session 3 s,
heartbeat 0.5 s, rebalance 2 s; see ``group_faults``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from spark_stream.client import Fluvio, FluvioAsync
from spark_stream.client.consumer.fetch import GroupFetch
from spark_stream.errors import FencedMemberError, UnknownMemberError
from spark_stream.local.cluster import LocalCluster
from spark_stream.net.connection import Connection
from spark_stream.net.endpoint import parse_endpoint
from spark_stream.protocol import control as c
from tests.integration.group_faults import (
    REBALANCE_S,
    SESSION_S,
    Producer,
    assert_no_overlapping_grants,
    duplicates,
    gaps,
    group_cluster,
    read_everything,
)
from tests.integration.group_member_proc import MemberProc, Output, members
from tests.integration.helpers import make_topic, unique
from tests.polling import wait_until
from tests.sc.groups.member import RawMember

pytestmark = pytest.mark.integration

PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with group_cluster(Path(tmp_path_factory.mktemp("group-timeouts"))) as running:
        yield running


@pytest.fixture
def fluvio(cluster: LocalCluster) -> Iterator[Fluvio]:
    with Fluvio.connect(cluster.endpoint, timeout=20) as client:
        yield client


def generation(fluvio: Fluvio, group: str) -> int:
    return int(fluvio.admin().describe_group(group).group["status"]["generation"])


def grants_of(fluvio: Fluvio, group: str, member: str | None) -> dict[int, int]:
    """``{partition: grant epoch}`` of the member in the published plan."""
    status = fluvio.admin().describe_group(group).group["status"]
    return {
        g["partition"]: g["grantEpoch"] for g in status["assignment"] if g["memberId"] == member
    }


async def assert_fenced(
    endpoint: str, group: str, topic: str, member: str, grants: dict[int, int]
) -> None:
    """``member``'s old grants: a group fetch is refused at the leader (fenced) and a
    commit by the SC (an expired or fenced member is no longer a member at all)."""
    assert grants
    client = await FluvioAsync.connect(endpoint)
    conn = await Connection.open("127.0.0.1", parse_endpoint(endpoint).port)
    try:
        for p, epoch in grants.items():
            with pytest.raises(FencedMemberError):
                async for _ in client.fetch_batches(
                    topic, p, 0, group=GroupFetch(group, member, epoch)
                ):
                    pass
        commits = [
            {"topic": topic, "partition": p, "offset": 1, "grantEpoch": e}
            for p, e in grants.items()
        ]
        with pytest.raises(UnknownMemberError):
            await conn.call(c.OffsetCommitRequest(group, member, commits), timeout=10)
    finally:
        await conn.close()
        await client.close()


def owns(proc: MemberProc, n: int) -> bool:
    return len(proc.output().parts()) == n


def test_sigstopped_member_is_replaced_after_the_session_timeout_and_fenced_when_woken(
    cluster: LocalCluster, fluvio: Fluvio, tmp_path: Path
) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS)
    group = unique("g")
    # The zombie commits only when woken (SIGCONT): what it commits then must be refused.
    zombie_args = ("--commit-ms", "0", "--commit-every", "1000000", "--commit-on-wake")
    with (
        Producer(fluvio, topic, PARTITIONS) as producer,
        members(cluster.endpoint, topic, group, tmp_path, 2, *zombie_args) as procs,
    ):
        zombie, survivor = procs
        wait_until(lambda: owns(zombie, 3) and owns(survivor, 3), 30, "a 3/3 split")
        wait_until(lambda: len(zombie.output().records) > 0, 30, "the zombie to read")
        before = generation(fluvio, group)
        zombie_id = zombie.output().member
        assert zombie_id is not None
        zombie_grants = grants_of(fluvio, group, zombie_id)
        zombie.signal(signal.SIGSTOP)
        stopped = time.monotonic()
        # Nothing moves within the session timeout (minus a heartbeat interval of slack).
        time.sleep(SESSION_S - 1.0)
        assert generation(fluvio, group) == before
        assert owns(survivor, 3)
        wait_until(lambda: owns(survivor, PARTITIONS), 15, "the survivor to take over")
        assert time.monotonic() - stopped >= SESSION_S - 1.0
        moved = generation(fluvio, group)
        # The zombie's grants, refused at the leader and by the commit fence already.
        asyncio.run(assert_fenced(cluster.endpoint, group, topic, zombie_id, zombie_grants))
        asleep = len(zombie.output().events)
        zombie.signal(signal.SIGCONT)
        woken = wait_until(
            lambda: [e for e in zombie.output().events if e["ev"] == "wake-commit"],
            15,
            "the zombie's commit after waking",
        )
        # Unless it had already joined again when the commit started (then it may commit
        # under its new grants), its commit is refused: by the SC (no longer a member) or,
        # once it heard of the fence, by the member itself.
        wake = woken[0]  # type: ignore[index]
        if wake["generation"] <= moved:
            assert "FencedMemberError" in str(wake["error"]) or "UnknownMemberError" in str(
                wake["error"]
            ), wake
        wait_until(lambda: owns(zombie, 3) and owns(survivor, 3), 30, "the zombie rejoining")
        producer.stop()
        z, s = read_everything(procs, fluvio, topic, PARTITIONS)
    # Woken, the zombie hands out nothing before it joined again (a newer generation).
    awake = z.events[asleep:]
    rejoined = next(
        i for i, e in enumerate(awake) if e["ev"] == "assignment" and e["generation"] > moved
    )
    assert [e for e in awake[:rejoined] if e["ev"] == "batch"] == []
    fenced = [e["msg"] for e in awake[:rejoined] if e["ev"] == "log"]
    assert any("starts over" in msg or "fenced" in msg for msg in fenced), fenced
    # Duplicates only inside its uncommitted window (it never committed: all it read).
    slept = Output.of(z.events[:asleep])
    assert duplicates(z.records + s.records) <= set(slept.records)
    assert not z.errors() and not s.errors()
    assert assert_no_overlapping_grants(cluster) > 0


async def _heartbeats(member: RawMember) -> None:
    """Keep the member's session alive (every 0.3 s) until its heartbeat is refused."""
    while True:
        await asyncio.sleep(0.3)
        try:
            await member.heartbeat()
        except (FencedMemberError, UnknownMemberError):  # fenced: no longer a member
            return


def test_member_ignoring_a_revoke_is_fenced_at_the_rebalance_timeout(
    cluster: LocalCluster, fluvio: Fluvio, tmp_path: Path
) -> None:
    topic = make_topic(fluvio, partitions=PARTITIONS)
    group = unique("g")
    producer = fluvio.topic_producer(topic, acks="all")
    for p in range(PARTITIONS):
        producer.send_batch(pa.table({"value": [f"{p}-{i}" for i in range(5)]}), partition=p)
    producer.close()
    port = parse_endpoint(cluster.endpoint).port

    async def body() -> None:
        stubborn = RawMember(port, group, [topic])
        await stubborn.join()
        assert len(stubborn.assigned()) == PARTITIONS
        old = {tp: stubborn.grant_epoch(tp) for tp in stubborn.assigned()}
        beating = asyncio.create_task(_heartbeats(stubborn))
        with members(cluster.endpoint, topic, group, tmp_path, 1) as (newcomer,):
            try:
                push = await stubborn.until(lambda push: bool(push.revoke))
                revoked_at = time.monotonic()
                revoked = {(g["topic"], g["partition"]) for g in push.revoke}
                assert len(revoked) == PARTITIONS // 2
                # Ignored: the newcomer gets nothing before the rebalance timeout ...
                await asyncio.sleep(REBALANCE_S - 0.5)
                assert newcomer.output().parts() == []
                # ... then the stubborn member is fenced and its partitions move.
                with pytest.raises(FencedMemberError):
                    await stubborn.until(lambda push: False)
                await asyncio.to_thread(
                    wait_until, lambda: len(newcomer.output().parts()) >= 3, 15, "the move"
                )
                assert time.monotonic() - revoked_at >= REBALANCE_S - 0.5
                assert {(topic, p) for p in newcomer.output().parts()} >= revoked
                # Its old grants are refused at the leader and by the SC.
                moved = {p: e for (_, p), e in old.items() if (topic, p) in revoked}
                await assert_fenced(cluster.endpoint, group, topic, stubborn.member_id, moved)
                with pytest.raises((FencedMemberError, UnknownMemberError)):
                    await stubborn.heartbeat()  # no longer a member
                await asyncio.to_thread(
                    wait_until,
                    lambda: not gaps(newcomer.output().records, {p: 5 for p in range(PARTITIONS)}),
                    30,
                    "the newcomer to read every partition",
                )
            finally:
                beating.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await beating
                await stubborn.close()

    asyncio.run(asyncio.wait_for(body(), 90))
    assert assert_no_overlapping_grants(cluster) > 0
