"""An SPU process SIGKILLed while it tiers, then restarted: every sealed segment ends up
in the tier once (no duplicate file, no hole), the temporary files of abandoned uploads
are gone, and every acknowledged record reads back with its offset, across the tier and
the SPU."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spark_stream.client import Offset
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.records import RECORD_SCHEMA
from spark_stream.tier import data_file, load_manifest, read_tier_batches
from spark_stream.tier.layout import temp_name
from tests.harness.processes import HOST, SpuChild
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import produce, run, until

pytestmark = pytest.mark.integration

FRAMES = 150


def test_sigkill_mid_upload_then_restart(spu_cluster: ClusterFactory, tmp_path: Path) -> None:
    tier = tmp_path / "tier" / "crash"

    async def body() -> None:
        idle = {"tier_interval_s": 3600.0}  # phase 1: fill the log, tier nothing
        async with spu_cluster([1], spu_settings=idle) as cluster:
            await cluster.create_topic(
                "crash", partitions=1, replicationFactor=1, segmentSize=1024, tier=str(tier)
            )
            conn = await cluster.connect(1)
            sent = []
            for n in range(FRAMES):  # about 2 KiB a frame: a segment each
                values = [f"{n}-{i}-{'z' * 60}" for i in range(25)]
                await produce(conn, "crash", 0, values)
                sent += values
            assert not tier.exists()
            await cluster.kill_spu(1)

            old = cluster.spus[1]
            tiering = {**cluster.spu_settings, "tier_interval_s": 0.1}
            spu = SpuChild(1, cluster.sc.private_port, old.workdir, old.ports, tiering)
            cluster.spus[1] = spu
            await asyncio.to_thread(spu.start)
            await until(
                lambda: len(load_manifest(str(tier), 0).files) >= 3,
                within=60,
                interval=0.01,
                what="tiering under way",
            )
            await cluster.kill_spu(1)  # mid-upload: most segments are not tiered yet
            partial = load_manifest(str(tier), 0)
            assert len(partial.files) < FRAMES - 1
            # what an upload killed between writing and moving leaves (the kill above
            # may have left one too): the next file's and the manifest's, of epoch 0
            # (this partition's first leader), and one of a writer of no epoch
            nxt, first = Path(data_file(0, partial.end_offset or 0)), Path(data_file(0, 0))
            abandoned = [
                tier / nxt.parent / temp_name(nxt.name, 0, "dead00000001"),
                tier / "_fluvio" / temp_name("partition=0.json", 0, "dead00000002"),
                tier / first.parent / temp_name(first.name, None, "dead00000003"),
            ]
            for path in abandoned:
                path.write_bytes(b"PAR1 half a file")
            assert set(abandoned) <= set(tier.rglob("*.tmp"))

            await asyncio.to_thread(spu.start)
            await until(
                lambda: (load_manifest(str(tier), 0).end_offset or 0) >= (FRAMES - 1) * 25,
                within=90,
                what="tiering completes after the restart",
            )
            manifest = load_manifest(str(tier), 0)
            assert manifest.files[: len(partial.files)] == partial.files
            assert manifest.start_offset == 0  # contiguous: the model checks each step
            names = sorted(p.name for p in (tier / "partition=0").glob("*.parquet"))
            assert names == sorted(Path(e.file).name for e in manifest.files)  # once each
            assert sorted(tier.rglob("*.tmp")) == []  # the restarted leader removed them
            end = manifest.end_offset
            assert end is not None
            tiered = [
                v.decode()
                for b in read_tier_batches(str(tier), manifest, 0, end, RECORD_SCHEMA)
                for v in b.column("value").to_pylist()
            ]
            assert tiered == sent[:end]  # nothing missing, nothing twice

            assert cluster.admin is not None
            client = await FluvioAsync.connect(f"{HOST}:{cluster.sc.public_port}")
            try:
                consumer = await client.partition_consumer("crash", 0)
                got = [
                    (r.offset, r.value.decode())
                    async for r in consumer.stream(Offset.beginning(), stop_at_end=True)
                ]
            finally:
                await client.close()
            assert got == list(enumerate(sent))

    run(body, timeout=300)
