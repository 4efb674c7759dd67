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
  decoding the same update K times on one event loop; each is already waiting for its
  next update when the topic is created, as a client's metadata watcher is (one that
  resumed its watch only then would first free the snapshot it held: K snapshots of N
  partitions, measured as 50-100 ms at N = 1,000 before the client let go of them);
- ``election_s``: SIGKILL of the SPU leading the most partitions, until every partition
  it led shows a new leader, Online, on the watch (the SC sees the SPU's connection drop)
  or is declared Offline (``election_offline``: no in-sync replica left to elect). Before
  the kill the run waits (at most ``IN_SYNC_WAIT_S``) for every replica to be in sync;
  ``not_in_sync`` counts the partitions that still had a replica behind at the kill;
- ``heartbeat_drops``: how many times the SC dropped an SPU it had not heard from within
  its heartbeat timeout, during the whole run (its log's ``HEARTBEAT_DROP`` lines).
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
from spark_stream.local.cluster import LocalCluster
from spark_stream.local.launcher import process_alive
from spark_stream.models import Partition, PartitionResolution
from spark_stream.protocol.control import MetadataUpdate
from spark_stream.supervision import log_text

__all__ = ["measure_sc"]

SPUS = 3
REPLICATION = 2
TOPIC = "scale-sc"
PROBE = "scale-probe"
TIMEOUT = 900.0
IN_SYNC_WAIT_S = 120.0
HEARTBEAT_DROP = "spu silent past heartbeat timeout"
"""What the SC logs when it drops an SPU it has not heard from in time."""


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

    def offline(self, names: set[str]) -> int:
        """How many of ``names`` the SC declared Offline (no eligible leader)."""
        return sum(
            1
            for name in names
            if (part := self.by_name.get(name)) is not None
            and part.status.resolution == PartitionResolution.OFFLINE
        )

    async def until(
        self, names: set[str], avoid: int | None, what: str, *, settled: bool = False
    ) -> float:
        """Seconds until every partition of ``names`` is Online (not under ``avoid``);
        ``settled``: Online elsewhere or declared Offline (no in-sync replica left)."""
        start = last = time.perf_counter()

        def done() -> int:
            return self.online(names, avoid) + (self.offline(names) if settled else 0)

        async with asyncio.timeout(TIMEOUT):
            while done() < len(names):
                await self.next()
                now = time.perf_counter()
                if now - last > 5:
                    last = now
                    progress(f"    {what}: {done()}/{len(names)}")
        return time.perf_counter() - start

    async def close(self) -> None:
        await self._updates.aclose()


async def _watch_latency(cluster: LocalCluster, watchers: int) -> dict[str, Any]:
    """Latency from a topic's create request to each of ``watchers`` watches seeing it."""
    admins = [admin_for(cluster) for _ in range(watchers)]
    seen: list[float] = []
    t0 = 0.0

    async def watch(admin: AdminClient, ready: asyncio.Event) -> None:
        updates = admin.watch_metadata()
        try:
            await anext(updates)  # the snapshot
            ready.set()
            # Already waiting for the next update when the topic is created, as a
            # client's metadata watcher is (the probe cannot come before t0).
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


async def _wait_in_sync(admin: AdminClient, partitions: int) -> int:
    """Wait (at most ``IN_SYNC_WAIT_S``) until every replica of the topic is in sync, so
    every partition of the SPU killed has somewhere to go; returns how many partitions
    still had a replica out of sync (0 when all caught up)."""
    deadline = time.perf_counter() + IN_SYNC_WAIT_S
    while True:
        parts = await admin.list_partitions(TOPIC)
        behind = sum(
            1
            for part in parts
            if len(part.status.lrs) < len(part.spec.replicas)
            or not all(r.in_sync and r.leo >= 0 for r in part.status.lrs)
        )
        if (behind == 0 and len(parts) == partitions) or time.perf_counter() > deadline:
            return behind + partitions - len(parts)
        await asyncio.sleep(0.5)  # bounded poll of the SC's view


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
        out["not_in_sync"] = await _wait_in_sync(admin, partitions)
        progress(
            f"    SIGKILL SPU {victim}, leader of {len(moved)} partitions "
            f"({out['not_in_sync']} partitions with a replica out of sync)"
        )
        start = time.perf_counter()
        kill_spu(cluster, victim)
        await view.until(moved, victim, "re-elected or offline", settled=True)
        out["election_s"] = round(time.perf_counter() - start, 3)
        out["election_partitions"] = len(moved)
        out["election_offline"] = view.offline(moved)
        out["heartbeat_drops"] = log_text(cluster.log_file("sc")).count(HEARTBEAT_DROP)
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
