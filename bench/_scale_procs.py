"""Processes of the scale benchmark: a local cluster, its processes' costs, SPU kills.

Every cluster lives in its own temporary directory and is stopped by ``LocalCluster.stop``
(by pid) in the caller's ``finally``; an SPU killed here is reaped here. Costs are read
from ``/proc`` through psutil: resident memory, CPU time (utime + stime), open fds.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psutil

from spark_stream.client.admin import AdminClient
from spark_stream.local.cluster import FIRST_SPU_ID, LocalCluster
from spark_stream.models import Partition, PartitionResolution
from spark_stream.supervision import reap, running, send_signal

__all__ = [
    "admin_for",
    "cpu_s",
    "fd_count",
    "kill_spu",
    "one_spu_topic",
    "progress",
    "rss_mb",
    "spu_ids",
    "start_cluster",
    "wait_async",
    "wait_online",
]

START_TIMEOUT = 180.0
"""Bound on each wait of a cluster start: SPUs reopening many replicas on a loaded
machine take a while."""


def progress(message: str) -> None:
    """One progress line on stderr."""
    print(f"[bench.scale] {message}", file=sys.stderr, flush=True)


def start_cluster(workdir: Path, spus: int) -> LocalCluster:
    """A started local cluster of ``spus`` custom SPUs (spawned here, killable by pid),
    without a default tier (tiering is not what these curves measure)."""
    cluster = LocalCluster(
        workdir,
        spus=spus,
        sc_port=0,
        spu_mode="custom",
        profile=workdir / "profile.json",
        start_timeout=START_TIMEOUT,
        default_tier=False,
    )
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster


def one_spu_topic(
    cluster: LocalCluster, topic: str, limit_s: float, segment_size: int | None = None
) -> int:
    """Create ``topic`` (one partition, RF 1; ``segment_size`` bytes a segment, or the
    default) on a one-SPU cluster and wait until it is Online; return that SPU's public
    port, which the curves talk to directly."""

    async def create() -> None:
        async with admin_for(cluster) as admin:
            if segment_size is None:
                await admin.create_topic(topic, partitions=1, replication_factor=1)
            else:
                await admin.create_topic(
                    topic, partitions=1, replication_factor=1, segmentSize=segment_size
                )
            await wait_online(admin, topic, 1, limit_s)

    asyncio.run(create())
    (spu,) = spu_ids(1)
    return int(cluster.layout.spu_ports[str(spu)][0])


def spu_ids(spus: int) -> list[int]:
    """The ids of a local cluster's ``spus`` SPUs."""
    return [FIRST_SPU_ID + i for i in range(spus)]


def admin_for(cluster: LocalCluster, timeout: float = 120.0) -> AdminClient:
    """An admin client of the cluster's SC (connects on first use)."""
    host, port = cluster.endpoint.split(",")[0].rsplit(":", 1)
    return AdminClient(host, int(port), timeout=timeout)


def _process(pid: int) -> psutil.Process:
    return psutil.Process(pid)


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid``, MiB."""
    return float(_process(pid).memory_info().rss) / 2**20


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` used so far."""
    times = _process(pid).cpu_times()
    return float(times.user + times.system)


def fd_count(pid: int) -> int:
    """Open file descriptors of process ``pid`` (``/proc/PID/fd``)."""
    return int(_process(pid).num_fds())


def kill_spu(cluster: LocalCluster, spu_id: int, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to SPU ``spu_id``'s process (by its pid record) and reap it.

    Raises:
        RuntimeError: the SPU is not running, or outlives the signal for 60 s.
    """
    record = running(cluster.spu_pid_file(spu_id))
    if record is None or not send_signal(record, sig):
        raise RuntimeError(f"SPU {spu_id} is not running")
    reap(record.pid, wait_s=60.0)
    if record.alive():
        raise RuntimeError(f"SPU {spu_id} (pid {record.pid}) survived signal {sig}")


async def wait_async(check: Callable[[], Awaitable[bool]], limit_s: float, what: str) -> float:
    """Poll ``check`` every 50 ms until true; return the seconds it took.

    Raises:
        TimeoutError: not true within ``limit_s`` (the message names ``what``).
    """
    start = time.perf_counter()
    while not await check():
        if time.perf_counter() - start > limit_s:
            raise TimeoutError(f"timed out after {limit_s:.0f}s waiting for {what}")
        await asyncio.sleep(0.05)  # bounded poll of another process's state
    return time.perf_counter() - start


def _online(parts: list[Partition], count: int) -> bool:
    return len(parts) == count and all(
        p.status.leader is not None and p.status.resolution == PartitionResolution.ONLINE
        for p in parts
    )


async def wait_online(admin: AdminClient, topic: str, count: int, limit_s: float) -> float:
    """Seconds until all ``count`` partitions of ``topic`` are Online under a leader."""

    async def check() -> bool:
        return _online(await admin.list_partitions(topic), count)

    return await wait_async(check, limit_s, f"{count} partitions of {topic} online")
