"""SPU identity with real processes (Redis, ``python -m sc``, ``python -m spu`` x 3).

The attack of issue 15: the followers of an ``acks=all`` partition are frozen (SIGSTOP)
and a local process speaking the replication protocol tells the leader they caught up.
Before peer authentication the leader took those reports, the high watermark passed
records only the leader held and ``acks=all`` succeeded. Now the forger is refused
(typed error, connection closed, logged) whether it skips the handshake or guesses a
proof, and the produce is not acknowledged. The SC's heartbeat timeout is long, so the
frozen followers stay Online and the only thing standing between the forger and the
high watermark is the leader's check.

An SPU process presenting another SPU's secret for that SPU's id is refused by the SC
with a message naming the reason, and the real SPU's advertised address is untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator

import pytest

from spark_stream.errors import (
    FluvioError,
    NotEnoughReplicasError,
    RequestTimeoutError,
    UnauthorizedError,
)
from spark_stream.local import free_port
from spark_stream.net.connection import Connection
from spark_stream.protocol import Acks
from spark_stream.spu_identity import SECRET_FILE, new_nonce, read_secret_file
from spu.private_messages import (
    FollowerLeoRequest,
    FollowerStreamRequest,
    PeerAuthRequest,
    PeerHelloRequest,
    ReplicaOffsets,
)
from tests.harness.processes import HOST, ProcessCluster, SpuChild
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import produce, run, until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOPIC = "guarded"
NAME = f"{TOPIC}-0"


@contextlib.contextmanager
def frozen(pids: list[int]) -> Iterator[None]:
    """SIGSTOP ``pids`` for the block, SIGCONT them after, whatever happened."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


async def forged_report(port: int, follower: int, leo: int) -> str:
    """A 'caught up' report for ``follower`` without the handshake: the leader's error
    (the connection is then closed), or ``accepted``."""
    conn = await Connection.open(HOST, port, timeout=10)
    try:
        try:
            await conn.call(FollowerLeoRequest(follower, {NAME: leo}), timeout=10)
        except UnauthorizedError as exc:
            await until(lambda: conn.closed, what="the forger's connection closed")
            return str(exc)
        return "accepted"
    finally:
        await conn.close()


async def guessed_handshake(port: int, follower: int, leader: int) -> UnauthorizedError:
    """The handshake with a proof made up without the pair key; the leader's error."""
    conn = await Connection.open(HOST, port, timeout=10)
    try:
        await conn.call(PeerHelloRequest(follower, leader, new_nonce()), timeout=10)
        with pytest.raises(UnauthorizedError) as refused:
            await conn.call(PeerAuthRequest(follower, b"\0" * 32), timeout=10)
        await until(lambda: conn.closed, what="the forger's connection closed")
        return refused.value
    finally:
        await conn.close()


def test_forged_caught_up_reports_for_frozen_followers_do_not_ack_all(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        cluster = spu_cluster(
            [1, 2, 3], heartbeat_timeout_s=60.0, spu_settings={"replica_max_lag_ms": 30_000}
        )
        async with cluster:
            await cluster.create_topic(
                TOPIC, partitions=1, replicationFactor=3, minInSyncReplicas=3
            )
            leader = await cluster.leader_of(NAME)
            followers = [i for i in (1, 2, 3) if i != leader]
            conn = await cluster.connect(leader)
            first = await produce(conn, TOPIC, 0, ["kept"], acks=Acks.ALL)
            assert first.base_offset == 0  # every replica has it
            private = cluster.spus[leader].ports[1]
            pids = [cluster.spus[i].pid for i in followers]
            assert all(pid is not None for pid in pids)
            with frozen([pid for pid in pids if pid is not None]):
                # The forger keeps telling the leader both followers hold everything
                # (LEO 2: "kept" and the record produced below).
                answers: list[str] = []

                async def forge() -> None:
                    while True:
                        for follower in followers:
                            answers.append(await forged_report(private, follower, 2))
                        await asyncio.sleep(0.1)  # a steady stream of forged reports

                forger = asyncio.create_task(forge())
                try:
                    with pytest.raises((RequestTimeoutError, NotEnoughReplicasError)):
                        await produce(
                            conn, TOPIC, 0, ["only-on-the-leader"], acks=Acks.ALL, timeout_ms=4000
                        )
                finally:
                    forger.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await forger
                assert answers, "the forger never got an answer"
                assert all("authenticate with PEER_HELLO" in answer for answer in answers)
                guessed = await guessed_handshake(private, followers[0], leader)
                assert f"SPU {followers[0]} failed peer authentication" in str(guessed)
            log = cluster.spus[leader].log()
            assert "peer refused" in log and "failed peer authentication" in log
            # Thawed, the real followers authenticate, catch up, and acks=all works again.
            resent = await until(
                lambda: _acked(conn, "after-thaw"), within=60, what="acks=all after the thaw"
            )
            assert resent >= 2

    run(body, timeout=200)


async def _acked(conn: Connection, value: str) -> int:
    """The base offset of ``value`` produced with ``acks=all`` (raises while refused)."""
    reply = await produce(conn, TOPIC, 0, [value], acks=Acks.ALL, timeout_ms=3000)
    return reply.base_offset


def test_an_spu_presenting_another_spus_secret_for_its_id_is_refused(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        cluster: ProcessCluster = spu_cluster([1, 2])
        async with cluster:
            assert cluster.admin is not None
            before = {s.spu_id: s.spec.public_endpoint for s in await cluster.admin.list_spus()}
            # SPU 2's own secret, presented for SPU 1's id from another address.
            stolen = read_secret_file(cluster.spus[2].workdir / SECRET_FILE)
            impostor = SpuChild(
                1,
                cluster.sc.private_port,
                cluster.workdir / "impostor",
                (free_port(), free_port()),
                {"heartbeat_interval_s": 0.5},
                stolen,
            )
            wrong = SpuChild(
                2,
                cluster.sc.private_port,
                cluster.workdir / "wrong",
                (free_port(), free_port()),
                {"heartbeat_interval_s": 0.5},
                "not-the-secret",
            )
            try:
                for child in (impostor, wrong):
                    await asyncio.to_thread(child.start)
                await asyncio.to_thread(
                    impostor.wait_for,
                    lambda: "the SC refused SPU 1: SPU 1: wrong secret" in impostor.log(),
                    30,
                    "the SC's refusal",
                )
                await asyncio.to_thread(
                    wrong.wait_for,
                    lambda: "the SC refused SPU 2: SPU 2: wrong secret" in wrong.log(),
                    30,
                    "the SC's refusal",
                )
            finally:
                impostor.kill()
                wrong.kill()
            assert "spu refused spu=1 " in cluster.sc.log()
            after = {s.spu_id: s for s in await cluster.admin.list_spus()}
            assert {i: s.spec.public_endpoint for i, s in after.items()} == before
            assert all(s.status.is_online for s in after.values())

    run(body)


def test_a_forged_peer_never_gets_replication_data(spu_cluster: ClusterFactory) -> None:
    """A stream opened without the handshake is refused before any frame is pushed."""

    async def body() -> None:
        cluster = spu_cluster([1, 2])
        async with cluster:
            await cluster.create_topic(
                TOPIC, partitions=1, replicationFactor=2, minInSyncReplicas=2
            )
            leader = await cluster.leader_of(NAME)
            follower = 2 if leader == 1 else 1
            conn = await cluster.connect(leader)
            await produce(conn, TOPIC, 0, ["secret-record"], acks=Acks.ALL)
            peer = await Connection.open(HOST, cluster.spus[leader].ports[1], timeout=10)
            try:
                request = FollowerStreamRequest.build(follower, {NAME: ReplicaOffsets(0, 0, ())})
                with pytest.raises(FluvioError) as refused:
                    stream = await peer.stream(request)
                    await stream.__anext__()
                assert isinstance(refused.value, UnauthorizedError)
                await until(lambda: peer.closed, what="the forger's connection closed")
            finally:
                await peer.close()

    run(body)
