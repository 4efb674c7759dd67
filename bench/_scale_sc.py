"""The SC curve of ``bench.scale``: N partitions on a real cluster of 3 SPU processes.

For each N, on a fresh cluster (Redis, SC, 3 SPUs in a temporary directory):

- ``create_s``: from the create request of one topic of N partitions (replication 2)
  until the metadata watch shows every partition Online under a leader (the SC assigns,
  the SPUs open their replicas and the leaders report);
- ``sc_rss_mb`` and ``redis_used_mb``: the SC's resident memory and Redis's
  ``INFO memory`` ``used_memory`` once they are all online, and what each partition
  added (``sc_rss_per_partition_kb``, ``redis_per_partition_kb``: over the figure
  before the topic, / N);
- ``watch``: K admin clients each hold a metadata watch (their own connection); a topic
  is created and each watcher's latency is from the create request to the update that
  names it (p50/p99/max). The K watchers run in this one process, so the figures include
  decoding the same update K times on one event loop;
- ``election_s``: SIGKILL of the SPU leading the most partitions, until every partition
  it led shows a new leader, Online, on the watch (the SC sees the SPU's connection drop).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from bench._scale_math import latency_summary, per_unit
from bench._scale_procs import (
    admin_for,
    kill_spu,
    progress,
    rss_mb,
    spu_ids,
    start_cluster,
)
from spark_stream.client.admin import AdminClient
from spark_stream.local.cluster import LocalCluster, process_alive
from spark_stream.models import Partition, PartitionResolution
from spark_stream.protocol.control import MetadataUpdate

__all__ = ["measure_sc"]

SPUS = 3
REPLICATION = 2
TOPIC = "scale-sc"
PROBE = "scale-probe"
TIMEOUT = 900.0


class _Partitions:
    """Partitions as the metadata watch last showed them, by name."""

    def __init__(self, admin: AdminClient) -> None:
        self.by_name: dict[str, Partition] = {}
        self._updates = admin.watch_metadata()

    async def next(self) -> None:
        """Apply the next update."""
        update = await anext(self._updates)
        _, _, parts = update.objects()
        if update.full:
            self.by_name = {}
        for part in parts:
            self.by_name[part.name] = part

    def online(self, names: set[str], avoid: int | None = None) -> int:
        """How many of ``names`` are Online under a leader other than ``avoid``."""
        count = 0
        for name in names:
            part = self.by_name.get(name)
            if part is None or part.status.resolution != PartitionResolution.ONLINE:
                continue
            if part.status.leader is not None and part.status.leader != avoid:
                count += 1
        return count

    async def until(self, names: set[str], avoid: int | None, what: str) -> float:
        """Seconds until every partition of ``names`` is Online (not under ``avoid``)."""
        start = last = time.perf_counter()
        async with asyncio.timeout(TIMEOUT):
            while self.online(names, avoid) < len(names):
                await self.next()
                now = time.perf_counter()
                if now - last > 5:
                    last = now
                    progress(f"    {what}: {self.online(names, avoid)}/{len(names)}")
        return time.perf_counter() - start

    async def close(self) -> None:
        await self._updates.aclose()


async def _watch_latency(cluster: LocalCluster, watchers: int) -> dict[str, Any]:
    """Latency from a topic's create request to each of ``watchers`` watches seeing it."""
    admins = [admin_for(cluster) for _ in range(watchers)]
    seen: list[float] = []
    started = asyncio.Event()
    t0 = 0.0

    async def watch(admin: AdminClient, ready: asyncio.Event) -> None:
        updates = admin.watch_metadata()
        try:
            await anext(updates)  # the snapshot
            ready.set()
            await started.wait()
            while True:
                update: MetadataUpdate = await anext(updates)
                if any(t["metadata"]["name"] == PROBE for t in update.topics):
                    seen.append((time.perf_counter() - t0) * 1000)
                    return
        finally:
            await updates.aclose()

    readies = [asyncio.Event() for _ in admins]
    tasks = [asyncio.create_task(watch(a, r)) for a, r in zip(admins, readies, strict=True)]
    creator = admin_for(cluster)
    try:
        async with asyncio.timeout(TIMEOUT):
            await asyncio.gather(*(r.wait() for r in readies))
            t0 = time.perf_counter()
            started.set()
            await creator.create_topic(PROBE, partitions=1, replication_factor=1)
            await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for admin in (*admins, creator):
            await admin.close()
    summary = latency_summary(seen)
    return {f"watch_{k}_ms": v for k, v in summary.items()} | {"watchers": len(seen)}


def _redis_used_mb(cluster: LocalCluster) -> float:
    """Redis's ``INFO memory`` ``used_memory``, MiB."""
    client = redis.Redis.from_url(cluster.layout.redis_url, password=cluster.redis_password())
    try:
        info = client.info("memory")
    finally:
        client.close()
    return int(info["used_memory"]) / 2**20


async def _run(cluster: LocalCluster, partitions: int, watchers: int) -> dict[str, Any]:
    admin = admin_for(cluster)
    view = _Partitions(admin)
    out: dict[str, Any] = {}
    try:
        await view.next()  # the snapshot
        sc_pid = process_alive(cluster.pid_file("sc"))
        assert sc_pid is not None, "the SC is not running"
        rss_before, redis_before = rss_mb(sc_pid), _redis_used_mb(cluster)
        names = {f"{TOPIC}-{i}" for i in range(partitions)}
        start = time.perf_counter()
        await admin.create_topic(TOPIC, partitions=partitions, replication_factor=REPLICATION)
        await view.until(names, None, "online")
        out["create_s"] = round(time.perf_counter() - start, 3)
        out["sc_rss_mb"] = round(rss_mb(sc_pid), 1)
        out["sc_rss_per_partition_kb"] = round(
            per_unit(out["sc_rss_mb"], rss_before, partitions) * 1024, 2
        )
        out["redis_used_mb"] = round(_redis_used_mb(cluster), 2)
        out["redis_per_partition_kb"] = round(
            per_unit(out["redis_used_mb"], redis_before, partitions) * 1024, 2
        )
        progress(f"    created in {out['create_s']}s; {watchers} metadata watches")
        out.update(await _watch_latency(cluster, watchers))
        leaders: dict[int, set[str]] = {i: set() for i in spu_ids(SPUS)}
        for name in names:
            leader = view.by_name[name].status.leader
            if leader is not None:
                leaders.setdefault(leader, set()).add(name)
        victim = max(leaders, key=lambda i: len(leaders[i]))
        moved = leaders[victim]
        progress(f"    SIGKILL SPU {victim}, leader of {len(moved)} partitions")
        start = time.perf_counter()
        kill_spu(cluster, victim)
        await view.until(moved, victim, "re-elected")
        out["election_s"] = round(time.perf_counter() - start, 3)
        out["election_partitions"] = len(moved)
    finally:
        with contextlib.suppress(Exception):
            await view.close()
        await admin.close()
    return out


def measure_sc(partitions: int, watchers: int) -> dict[str, Any]:
    """The SC figures at ``partitions`` (module docstring), on a cluster of its own."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-sc-") as tmp:
        cluster = start_cluster(Path(tmp) / "cluster", SPUS)
        try:
            return asyncio.run(_run(cluster, partitions, watchers))
        finally:
            cluster.stop()
