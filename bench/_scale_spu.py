"""The SPU curves of ``bench.scale``: partitions per SPU, and client connections per SPU.

Partitions (``measure_partitions``), on a fresh cluster of 3 SPU processes per size P:
one topic of P partitions with replication 3, so every SPU holds P replicas (about a
third as leader). On the first SPU:

- ``rss_per_partition_mb``: (RSS with the P replicas, after ``settle_s`` - RSS before
  the topic) / P;
- ``settle_cpu_pct``: CPU (utime + stime) over the ``settle_s`` seconds after the last
  partition came online, in percent of one core: the creation's one-time work (every
  replica's first high-watermark checkpoint, an atomic write and fsync each, at the next
  10 s housekeeping round; the followers' first syncs), which is not idle;
- ``idle_cpu_pct``: CPU over the next ``idle_s`` seconds, still with no traffic;
  ``fds``: its open file descriptors (and ``fds_before`` without the topic);
- ``produce_rps``: 100 B records sent with ``send_batch``, an equal share to every
  partition in one batch each, acks=all (every replica written), until all are
  acknowledged (after one record to every partition, so leader lookups and connections
  are not timed);
- ``catch_up_s``: the third SPU is stopped (SIGTERM), more records are produced (a share
  to every partition), and the SPU is started again: from its start until the SC's view
  of every partition shows its replica in sync at the leader's LEO (null when that does
  not happen within ``CATCH_UP_WAIT_S``).

Connections (``measure_connections``), on one cluster of one SPU, for each size C (in
increasing order): C connections opened to the SPU's public port at once (refused or
failed ones counted, must be 0), ``rss_per_conn_kb`` (RSS with them - RSS before) / C;
then one produce of one 100 B record from each connection in turn (``seq_p99_ms``) and
from all of them at once (``burst_p99_ms``, queueing included); then all are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench._scale_math import cpu_percent, latency_summary, per_unit
from bench._scale_procs import (
    admin_for,
    cpu_s,
    fd_count,
    kill_spu,
    one_spu_topic,
    progress,
    rss_mb,
    spu_ids,
    start_cluster,
    wait_async,
    wait_online,
)
from spark_stream.client import Fluvio
from spark_stream.client.admin import AdminClient
from spark_stream.errors import FluvioError
from spark_stream.local.cluster import LocalCluster
from spark_stream.net.connection import Connection
from spark_stream.protocol.data import ProduceRequest
from spark_stream.records import now_us
from spark_stream.small_frame import encode_small

__all__ = ["measure_connections", "measure_partitions", "values_table"]

TOPIC = "scale-spu"
CONN_TOPIC = "scale-conn"
VALUE_BYTES = 100
TIMEOUT = 900.0
CATCH_UP_WAIT_S = 300.0
"""A restarted SPU not in sync on every partition by then gets ``catch_up_s`` null."""
SETTLE_S = 3.0
"""Pause after a change before reading memory: replicas finish opening, buffers settle."""


def values_table(n: int) -> pa.Table:
    """A table of ``n`` random ``VALUE_BYTES``-byte values, built without a Python loop."""
    raw = np.random.default_rng(5).integers(0, 256, n * VALUE_BYTES, dtype=np.uint8).tobytes()
    offsets = np.arange(0, (n + 1) * VALUE_BYTES, VALUE_BYTES, dtype=np.int32)
    values = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw)])
    return pa.table({"value": values})


def _produce(cluster: LocalCluster, partitions: int, records: int) -> float:
    """Seconds to send ``records`` spread evenly over ``partitions``, acks=all."""
    share = max(records // partitions, 1)
    table = values_table(share)
    with Fluvio.connect(cluster.endpoint, timeout=120) as client:
        producer = client.topic_producer(
            TOPIC, batch_size=4 << 20, linger_ms=1, acks="all", max_in_flight=3
        )
        warm = [producer.send_batch(table.slice(0, 1), partition=p) for p in range(partitions)]
        for future in warm:  # leaders looked up and connected before the clock runs
            future.result(timeout=TIMEOUT)
        start = time.perf_counter()
        futures = [producer.send_batch(table, partition=p) for p in range(partitions)]
        for future in futures:
            future.result(timeout=TIMEOUT)
        producer.flush()
        elapsed = time.perf_counter() - start
        producer.close()
    return elapsed


async def _caught_up(admin: AdminClient, spu_id: int, partitions: int) -> bool:
    parts = await admin.list_partitions(TOPIC)
    if len(parts) != partitions:
        return False
    for part in parts:
        replica = part.status.replica(spu_id)
        leo = part.status.leo
        if replica is None or not replica.in_sync or leo < 0 or replica.leo < leo:
            return False
    return True


def _partitions_run(
    cluster: LocalCluster, partitions: int, records: int, idle_s: float, settle_s: float
) -> dict[str, Any]:
    first, _, last = spu_ids(3)
    pid = cluster.spu_pid(first)
    assert pid is not None, "SPU not running"
    time.sleep(SETTLE_S)
    rss_before, fds_before = rss_mb(pid), fd_count(pid)

    async def create() -> float:
        async with admin_for(cluster) as admin:
            await admin.create_topic(TOPIC, partitions=partitions, replication_factor=3)
            return await wait_online(admin, TOPIC, partitions, TIMEOUT)

    out: dict[str, Any] = {"create_s": round(asyncio.run(create()), 3)}
    cpu0, wall0 = cpu_s(pid), time.perf_counter()
    time.sleep(settle_s)  # the creation's one-time work: first checkpoints, first syncs
    cpu1, wall1 = cpu_s(pid), time.perf_counter()
    out["settle_cpu_pct"] = round(cpu_percent(cpu0, cpu1, wall1 - wall0), 2)
    out["rss_mb"] = round(rss_mb(pid), 1)
    out["rss_per_partition_mb"] = round(per_unit(out["rss_mb"], rss_before, partitions), 4)
    out["fds_before"], out["fds"] = fds_before, fd_count(pid)
    cpu0, wall0 = cpu_s(pid), time.perf_counter()
    time.sleep(idle_s)  # the idle interval measured
    out["idle_cpu_pct"] = round(cpu_percent(cpu0, cpu_s(pid), time.perf_counter() - wall0), 2)
    progress(f"    idle {out['idle_cpu_pct']}% of a core, rss {out['rss_mb']} MiB; producing")
    seconds = _produce(cluster, partitions, records)
    out["produce_rps"] = round(max(records // partitions, 1) * partitions / seconds)
    progress(f"    {out['produce_rps']} records/s; stopping SPU {last}")
    kill_spu(cluster, last, 15)  # SIGTERM: a clean stop, then a restart
    _produce(cluster, partitions, records // 4)
    start = time.perf_counter()
    cluster.start()  # starts the stopped SPU again

    async def catch_up() -> None:
        async with admin_for(cluster) as admin:
            await wait_async(
                lambda: _caught_up(admin, last, partitions), CATCH_UP_WAIT_S, f"SPU {last}"
            )

    try:
        asyncio.run(catch_up())
        out["catch_up_s"] = round(time.perf_counter() - start, 3)
    except TimeoutError as exc:  # a figure of its own, not the end of the run
        progress(f"    {exc}")
        out["catch_up_s"] = None
    return out


def measure_partitions(
    partitions: int, records: int, idle_s: float, settle_s: float
) -> dict[str, Any]:
    """The SPU figures at ``partitions`` (module docstring), on a cluster of its own."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-spu-") as tmp:
        cluster = start_cluster(Path(tmp) / "cluster", 3)
        try:
            return _partitions_run(cluster, partitions, records, idle_s, settle_s)
        finally:
            cluster.stop()


def _frame() -> bytes:
    frame = encode_small([b"x" * VALUE_BYTES], None, [now_us()])
    assert frame is not None, "the small-frame encoder is unavailable"
    return frame


async def _produce_once(conn: Connection, frame: bytes) -> float:
    """Milliseconds of one produce of ``frame`` on ``conn``."""
    start = time.perf_counter()
    await conn.call(ProduceRequest(CONN_TOPIC, 0, tail=frame), timeout=120)
    return (time.perf_counter() - start) * 1000


async def _connections(port: int, count: int, pid: int) -> dict[str, Any]:
    before = rss_mb(pid)

    async def open_one() -> Connection | None:
        try:
            return await Connection.open("127.0.0.1", port, timeout=120)
        except (FluvioError, OSError):
            return None

    opened = await asyncio.gather(*(open_one() for _ in range(count)))
    conns = [c for c in opened if c is not None]
    out: dict[str, Any] = {"refused": count - len(conns)}
    try:
        await asyncio.sleep(SETTLE_S)
        out["rss_per_conn_kb"] = round(per_unit(rss_mb(pid), before, count) * 1024, 2)
        out["fds"] = fd_count(pid)
        if not conns:
            return out
        frame = _frame()
        await _produce_once(conns[0], frame)  # warm-up: the SPU's first append path
        seq = [await _produce_once(c, frame) for c in conns]
        burst = await asyncio.gather(
            *(_produce_once(c, frame) for c in conns), return_exceptions=True
        )
        ok = [b for b in burst if isinstance(b, float)]
        out["errors"] = len(burst) - len(ok)
        out["seq_p99_ms"] = latency_summary(seq)["p99"]
        out["burst_p99_ms"] = latency_summary(ok)["p99"]
    finally:
        for conn in conns:
            with contextlib.suppress(Exception):
                await conn.close()
    return out


def measure_connections(sizes: list[int]) -> dict[int, dict[str, Any]]:
    """The connection figures at each size (module docstring), on one cluster."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-conn-") as tmp:
        cluster = start_cluster(Path(tmp) / "cluster", 1)
        try:
            (spu,) = spu_ids(1)
            port = one_spu_topic(cluster, CONN_TOPIC, TIMEOUT)
            results = {}
            for count in sorted(sizes):
                pid = cluster.spu_pid(spu)
                assert pid is not None, "SPU not running"
                progress(f"  {count} connections")
                results[count] = asyncio.run(_connections(port, count, pid))
                progress(f"    {results[count]}")
            return results
        finally:
            cluster.stop()
