"""Nothing unreadable gets in, and what rots later is named (or skipped) by readers.

Real processes: Redis, ``python -m sc``, ``python -m spu``. Every poisoned frame keeps a
valid crc (``tests.frame_mutations``), so only the leader's payload check can refuse it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from spark_stream.client import FluvioAsync, Offset
from spark_stream.errors import CorruptFrameError
from spark_stream.protocol import Acks
from spark_stream.records import BATCH_HEADER_SIZE, encode_records, read_header
from spu.storage.layout import replica_dir
from tests.frame_mutations import POISON, list_offsets_past_child, sample
from tests.harness.processes import HOST
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import fetch_values, produce, run, until, values

pytestmark = pytest.mark.integration


def test_poisoned_frames_are_refused_by_the_leader_and_never_replicated(
    spu_cluster: ClusterFactory,
) -> None:
    async def body() -> None:
        async with spu_cluster([1, 2]) as cluster:
            await cluster.create_topic(
                "orders", partitions=1, replicationFactor=2, minInSyncReplicas=2
            )
            leader = await cluster.leader_of("orders-0")
            conn = await cluster.connect(leader)
            await produce(conn, "orders", 0, ["a", "b"], acks=Acks.ALL)
            for _name, poison in sorted(POISON.items()):
                with pytest.raises(CorruptFrameError, match=r"the frame of offsets \[0, \d+\]"):
                    await produce(conn, "orders", 0, [], frame=poison(sample()), acks=Acks.ALL)
            reply = await produce(conn, "orders", 0, ["c"], acks=Acks.ALL)
            assert (reply.base_offset, reply.hw) == (2, 3)  # nothing poisoned was appended
            assert await fetch_values(conn, "orders", 0) == values("a", "b", "c")

            async def replicas_at_3() -> bool | None:
                for part in await cluster.admin.list_partitions():
                    if part.name == "orders-0":
                        leos = [r.leo for r in part.status.lrs]
                        return (sorted(leos) == [3, 3]) or None
                return None

            await until(replicas_at_3, what="both replicas at LEO 3")
            assert all(spu.alive for spu in cluster.spus.values())

    run(body)


def _rot_byte(log_file: Path, position: int) -> None:
    """Flip one byte of a segment file in place, as bit rot would."""
    with log_file.open("r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0x20]))


def test_readers_name_a_damaged_range_and_skip_it_only_when_asked(
    spu_cluster: ClusterFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Validation off lets a poisoned frame in ([2, 3]); bit rot then damages [4, 5].

    Every read path fails naming the first damaged range; with ``skip_corrupt_frames``
    each skips both ranges with a WARNING naming them and reads the rest exactly.
    """

    async def body() -> None:
        settings = {"frame_validation": "none"}
        async with spu_cluster([1], spu_settings=settings) as cluster:
            await cluster.create_topic("rot", partitions=1, replicationFactor=1)
            conn = await cluster.connect(1)
            await produce(conn, "rot", 0, ["a0", "a1"])
            await produce(conn, "rot", 0, [], frame=list_offsets_past_child(sample()))
            rotten = encode_records([b"r4", b"r5"])
            await produce(conn, "rot", 0, [], frame=rotten)
            await produce(conn, "rot", 0, ["b6", "b7"])
            log_file = replica_dir(cluster.spus[1].workdir, "rot", 0) / f"{0:020}.log"
            data = log_file.read_bytes()
            third = data.find(rotten[BATCH_HEADER_SIZE:])  # its payload, as stored
            assert third > 0 and read_header(data, third - BATCH_HEADER_SIZE).base_offset == 4
            _rot_byte(log_file, third + len(rotten) - BATCH_HEADER_SIZE - 20)

            assert cluster.sc.public_port is not None
            client = await FluvioAsync.connect(f"{HOST}:{cluster.sc.public_port}")
            try:
                for local in (True, False):
                    with pytest.raises(CorruptFrameError, match=r"offsets \[2, 3\]"):
                        [b async for b in client.fetch_batches("rot", 0, 0, 8, local=local)]
                plain = await client.partition_consumer("rot", 0)
                with pytest.raises(CorruptFrameError, match=r"offsets \[2, 3\].*skip_corrupt"):
                    [r async for r in plain.stream(Offset.beginning(), stop_at_end=True)]

                caplog.clear()
                with caplog.at_level(logging.WARNING):
                    for local in (True, False):
                        got = [
                            v
                            async for b in client.fetch_batches(
                                "rot", 0, 0, 8, local=local, skip_corrupt_frames=True
                            )
                            for v in b.column("value").to_pylist()
                        ]
                        assert got == values("a0", "a1", "b6", "b7")
                    skipping = await client.partition_consumer("rot", 0, skip_corrupt_frames=True)
                    streamed = [
                        (r.offset, r.value)
                        async for r in skipping.stream(Offset.beginning(), stop_at_end=True)
                    ]
                    assert streamed == [(0, b"a0"), (1, b"a1"), (6, b"b6"), (7, b"b7")]
                warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
                for damaged in ("[2, 3]", "[4, 5]"):
                    assert sum(f"skipping the frame of offsets {damaged}" in m for m in warned) == 3
            finally:
                await client.close()

    run(body)
