"""Tiering in a whole cluster (real SC and SPU apps in one event loop, real sockets):
sealed segments reach the tier and its manifest, local retention deletes only what the
tier holds, clients read across the tier and the SPU, a new leader resumes tiering, and
an unwritable tier is reported and holds local retention back."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from spark_stream.client import Offset
from spark_stream.client.fluvio import FluvioAsync
from spark_stream.tier import load_manifest
from tests.spu.cluster_inproc import HOST, InProcessCluster
from tests.spu.helpers import offsets, produce, run, until

pytestmark = pytest.mark.integration

FAST = {"tier_interval_s": 0.1, "retention_interval_s": 0.2}


def tiered_spec(tier: Path, **extra: Any) -> dict[str, Any]:
    """A topic with small segments (about one produced frame each) and a tier."""
    return {
        "partitions": 1,
        "replicationFactor": 1,
        "segmentSize": 1024,
        "tier": str(tier),
        "retentionSecs": 3600,
        **extra,
    }


def items(first: int, count: int) -> list[str]:
    return [f"record-{i:05d}" for i in range(first, first + count)]


async def produce_many(cluster: InProcessCluster, spu: int, topic: str, frames: int) -> list[str]:
    conn = await cluster.conn(spu)
    sent: list[str] = []
    for n in range(frames):
        batch = items(n * 5, 5)
        await produce(conn, topic, 0, batch)
        sent += batch
    return sent


async def partition_tier(cluster: InProcessCluster, name: str) -> str | None:
    assert cluster.admin is not None
    for part in await cluster.admin.list_partitions():
        if part.name == name:
            return part.status.tier
    raise AssertionError(f"no partition {name}")


async def client_values(cluster: InProcessCluster, topic: str) -> tuple[list[str], list[int]]:
    """Every record from the beginning through a consumer (stops at the end)."""
    assert cluster.sc is not None
    client = await FluvioAsync.connect(f"{HOST}:{cluster.sc.public_port}")
    try:
        consumer = await client.partition_consumer(topic, 0)
        got, offs = [], []
        async for record in consumer.stream(Offset.beginning(), stop_at_end=True):
            got.append(record.value.decode())
            offs.append(record.offset)
        return got, offs
    finally:
        await client.close()


def test_history_below_the_log_start_is_read_from_the_tier(tmp_path: Path) -> None:
    async def body() -> None:
        tier = tmp_path / "tier" / "hist"
        async with InProcessCluster(tmp_path, [1], **FAST) as cluster:
            await cluster.create_topic("hist", **tiered_spec(tier, localRetentionSecs=1))
            sent = await produce_many(cluster, 1, "hist", 30)
            conn = await cluster.conn(1)

            async def trimmed() -> bool:
                start = (await offsets(conn, "hist", 0)).log_start
                return start > 20

            await until(trimmed, within=30, what="local retention of tiered segments")
            manifest = load_manifest(str(tier), 0)
            log_start = (await offsets(conn, "hist", 0)).log_start
            assert manifest.start_offset == 0
            assert manifest.end_offset is not None and manifest.end_offset >= log_start
            files = sorted(p.name for p in (tier / "partition=0").glob("*.parquet"))
            assert files == sorted(Path(e.file).name for e in manifest.files)

            got, offs = await client_values(cluster, "hist")
            assert got == sent
            assert offs == list(range(len(sent)))

            assert cluster.sc is not None
            client = await FluvioAsync.connect(f"{HOST}:{cluster.sc.public_port}")
            try:
                assert (await client.fetch_offsets("hist", 0)).log_start == 0
                values = [
                    v.decode()
                    async for b in client.fetch_batches("hist", 0, 3, len(sent) - 2)
                    for v in b.column("value").to_pylist()
                ]
                assert values == sent[3:-2]
            finally:
                await client.close()

            status = await until(lambda: partition_tier(cluster, "hist-0"), what="TIER status")
            assert status.startswith("ok: ") and " files [0, " in status

    run(body)


def test_a_new_leader_resumes_tiering_where_the_manifest_ends(tmp_path: Path) -> None:
    async def body() -> None:
        tier = tmp_path / "tier" / "moves"
        async with InProcessCluster(tmp_path, [1, 2], **FAST) as cluster:
            spec = tiered_spec(tier, replicationFactor=2)
            spec["replicaAssignment"] = [{"partition": 0, "replicas": [1, 2]}]
            del spec["partitions"], spec["replicationFactor"]
            await cluster.create_topic("moves", **spec)
            first = await produce_many(cluster, 1, "moves", 12)
            await until(
                lambda: (load_manifest(str(tier), 0).end_offset or 0) >= 40,
                what="the first leader tiers",
            )
            # followers never tier: SPU 2's keeper has not reported for the partition
            assert "moves-0" not in cluster.spus[2].dispatcher.tier_keeper.status
            before = load_manifest(str(tier), 0)
            await cluster.stop_spu(1)
            await until(
                lambda: cluster.spus[2].dispatcher.leader("moves-0") is not None,
                what="SPU 2 leads",
            )
            conn = await cluster.conn(2)
            more = [f"later-{i}" for i in range(40)]
            for n in range(0, 40, 5):
                await produce(conn, "moves", 0, more[n : n + 5])
            total = len(first) + len(more)
            await until(
                lambda: (load_manifest(str(tier), 0).end_offset or 0) >= total - 10,
                what="the new leader tiers on",
            )
            after = load_manifest(str(tier), 0)
            assert after.files[: len(before.files)] == before.files  # nothing rewritten
            assert after.start_offset == 0  # contiguous (the model checks every step)
            files = sorted(p.name for p in (tier / "partition=0").glob("*.parquet"))
            assert files == sorted(Path(e.file).name for e in after.files)
            got, offs = await client_values(cluster, "moves")
            assert got == first + more

    run(body)


def test_an_unwritable_tier_is_reported_and_holds_local_retention(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        blocker = tmp_path / "not-a-dir"
        blocker.write_text("a regular file: no directory can be made below it, even by root")
        tier = blocker / "blocked"
        async with InProcessCluster(tmp_path, [1], **FAST) as cluster:
            await cluster.create_topic("blocked", **tiered_spec(tier, localRetentionSecs=1))
            sent = await produce_many(cluster, 1, "blocked", 20)

            async def failing() -> str | None:
                status = await partition_tier(cluster, "blocked-0")
                return status if status and status.startswith("error: ") else None

            status = await until(failing, what="the tier error in partition list")
            assert str(tier) in status and "Not a directory" in status
            errors = [r for r in caplog.records if r.levelno == logging.ERROR]
            assert any(
                str(tier) in r.getMessage() and "tiering failed" in r.getMessage() for r in errors
            )
            keeper = cluster.spus[1].dispatcher
            log = keeper.log("blocked-0")
            assert log is not None
            assert len([s for s in log.segments if s.sealed]) > 10
            housekeeper = cluster.spus[1].dispatcher.housekeeper
            assert housekeeper is not None
            seen = housekeeper.rounds
            # records are older than the local retention after a few rounds; none is tiered
            await until(lambda: housekeeper.rounds >= seen + 3, within=30, what="retention rounds")
            conn = await cluster.conn(1)
            assert (await offsets(conn, "blocked", 0)).log_start == 0

            blocker.unlink()  # the tier works again
            await until(
                lambda: (load_manifest(str(tier), 0).end_offset or 0) > 50, what="tiering resumes"
            )

            async def trimmed() -> bool:
                return (await offsets(conn, "blocked", 0)).log_start > 0

            await until(trimmed, within=30, what="local retention after the tier recovered")
            got, _ = await client_values(cluster, "blocked")
            assert got == sent

    caplog.set_level(logging.INFO)
    run(body)
