"""An SPU process SIGKILLed while it tiers a ``--table delta`` topic, then restarted: the
Delta table ends up with every tiered file once (no duplicate add, no hole), its rows
exactly the produced records."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from spark_stream.tier import load_manifest
from spu.storage.delta_plan import app_id
from tests.harness.processes import SpuChild
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import produce, run, until
from tests.spu.storage.helpers import commit_adds

pytestmark = pytest.mark.integration

FRAMES = 120


def committed(tier: Path) -> int | None:
    if not (tier / "_delta_log").is_dir():
        return None
    return DeltaTable(str(tier)).transaction_version(app_id(0))


def test_sigkill_mid_commit_then_restart_adds_each_file_once(
    spu_cluster: ClusterFactory, tmp_path: Path
) -> None:
    tier = tmp_path / "tier" / "crashd"

    async def body() -> None:
        idle = {"tier_interval_s": 3600.0}  # phase 1: fill the log, tier nothing
        async with spu_cluster([1], spu_settings=idle) as cluster:
            await cluster.create_topic(
                "crashd", partitions=1, replicationFactor=1, segmentSize=1024,
                tier=str(tier), table="delta",
            )  # fmt: skip
            conn = await cluster.connect(1)
            sent = []
            for n in range(FRAMES):  # about 2 KiB a frame: a segment each
                values = [f"{n}-{i}-{'z' * 60}" for i in range(25)]
                await produce(conn, "crashd", 0, values)
                sent += values
            await cluster.kill_spu(1)

            old = cluster.spus[1]
            tiering = {**cluster.spu_settings, "tier_interval_s": 0.1}
            spu = SpuChild(1, cluster.sc.private_port, old.workdir, old.ports, tiering)
            cluster.spus[1] = spu
            await asyncio.to_thread(spu.start)
            await until(
                lambda: (committed(tier) or 0) >= 3 * 25,
                within=60,
                interval=0.01,
                what="Delta commits under way",
            )
            await cluster.kill_spu(1)  # mid-way: most files are not committed yet
            partial = DeltaTable(str(tier)).version()

            await asyncio.to_thread(spu.start)

            def complete() -> bool:
                files = load_manifest(str(tier), 0).files
                return (
                    bool(files)
                    and files[-1].next_offset >= (FRAMES - 1) * 25
                    and committed(tier) == files[-1].base_offset
                )

            await until(complete, within=120, what="every tiered file committed")
            table = DeltaTable(str(tier))
            assert table.version() > partial
            manifest = load_manifest(str(tier), 0)
            paths = pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()
            assert sorted(paths) == sorted(e.file for e in manifest.files)
            adds = [path for added in commit_adds(tier, table.version()) for path in added]
            assert len(adds) == len(manifest.files)  # no file added twice
            rows = table.to_pyarrow_table().sort_by("offset")
            end = manifest.end_offset
            assert rows.column("offset").to_pylist() == list(range(end or 0))
            assert [v.decode() for v in rows.column("value").to_pylist()] == sent[:end]

    run(body, timeout=300)
