"""End-to-end latency alone: ``send`` to consumer receipt at a fixed rate.

``bench.cluster`` measures this as one part of a long run; this module runs only that part
on its own local cluster (3 SPUs as processes, not tiered): ``e2e_*`` on a replication-1
topic with acks=leader, ``e2e_rf3_*`` on replication 3 with acks=all, each the p50 and
p99 of ``--rounds`` runs of ``--seconds`` at ``--rate`` records/s pooled together.

Each record's value is the ``perf_counter_ns`` of its ``send``; the consumer stamps its
receipt on the same clock (same process), so the figure is the whole path: producer
encode, socket, the leader's append and high watermark, the waiting fetch stream, the
consumer's decode and delivery.

    .venv/bin/python -m bench.e2e [--rate 1000] [--seconds 5] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from spark_stream.client import Fluvio, FluvioAsync, Offset
from spark_stream.local.cluster import LocalCluster

__all__ = ["e2e_latency", "e2e_figures", "wait_topic"]


def wait_topic(fluvio: Fluvio, name: str, replication: int) -> None:
    """Create a one-partition topic and wait until its leader serves it."""
    fluvio.admin().create_topic(name, partitions=1, replication_factor=replication)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        infos = fluvio.topic_partitions(name)
        if infos and infos[0].leader is not None and infos[0].resolution == "Online":
            fluvio.fetch_offsets(name, 0)
            return
        time.sleep(0.05)  # bounded wait for the partition to come online
    raise RuntimeError(f"topic {name} not online")


async def e2e_latency(
    endpoint: str, topic: str, rate: float, seconds: float, acks: str, token: str | None = None
) -> list[float]:
    """Milliseconds from ``send`` to committed consume, at ``rate`` records/s."""
    latencies: list[float] = []
    async with await FluvioAsync.connect(endpoint, token=token) as client:
        consumer = await client.partition_consumer(topic, 0)
        producer = await client.topic_producer(topic, linger_ms=0, acks=acks)
        count = int(rate * seconds)
        ready = asyncio.Event()

        async def consume() -> None:
            stream = consumer.stream_batches(Offset.end())
            ready.set()
            async for batch in stream:
                now = time.perf_counter_ns()
                sent = np.frombuffer(b"".join(batch.column("value").to_pylist()), dtype=np.int64)
                latencies.extend(((now - sent) / 1e6).tolist())
                if len(latencies) >= count:
                    await stream.aclose()
                    return

        reader = asyncio.get_running_loop().create_task(consume())
        await ready.wait()
        await asyncio.sleep(0.5)  # the stream is open at the end before we send
        interval = 1.0 / rate
        start = time.perf_counter()
        for i in range(count):
            target = start + i * interval
            delay = target - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)  # pacing the fixed send rate
            await producer.send(None, np.int64(time.perf_counter_ns()).tobytes(), partition=0)
        async with asyncio.timeout(60):
            await reader
        await producer.close()
    return latencies


def e2e_figures(prefix: str, latencies: list[float]) -> dict[str, float]:
    """``{prefix}_p50_ms`` and ``{prefix}_p99_ms`` of ``latencies`` (milliseconds)."""
    return {
        f"{prefix}_p50_ms": round(statistics.median(latencies), 3),
        f"{prefix}_p99_ms": round(float(np.percentile(latencies, 99)), 3),
    }


def run(rate: float, seconds: float, rounds: int) -> dict[str, Any]:
    """The e2e figures at RF 1 (acks=leader) and RF 3 (acks=all) on a new local cluster."""
    results: dict[str, Any] = {"e2e_rate_rps": rate, "rounds": rounds}
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        cluster = LocalCluster(
            Path(tmp),
            spus=3,
            sc_port=0,
            spu_mode="custom",
            profile=Path(tmp) / "profile.json",
            start_timeout=60,
            default_tier=False,
        )
        try:
            cluster.start()
            with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
                wait_topic(fluvio, "latency-rf1", 1)
                wait_topic(fluvio, "latency-rf3", 3)
            for rf, acks, prefix in ((1, "leader", "e2e"), (3, "all", "e2e_rf3")):
                latencies: list[float] = []
                for _ in range(rounds):
                    latencies += asyncio.run(
                        e2e_latency(cluster.endpoint, f"latency-rf{rf}", rate, seconds, acks)
                    )
                results |= e2e_figures(prefix, latencies)
        finally:
            cluster.stop()
    results["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="records/s")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds a round")
    parser.add_argument("--rounds", type=int, default=1, help="rounds pooled per figure")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    results = run(args.rate, args.seconds, args.rounds)
    for key, value in results.items():
        print(f"{key:28s} {value}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
