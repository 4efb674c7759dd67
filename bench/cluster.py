"""Cluster benchmark: produce, consume and end-to-end latency on a real local cluster.

Starts a local cluster (Redis, SC, 3 SPUs as processes) in a temporary directory and
measures, in one run:

- produce throughput (records/s, MB/s) of 100 B and 1 KB records to one partition with
  replication 1 and 3, through the bulk Arrow path (``send_batch``) and through
  per-record ``send``;
- consume throughput (streaming fetch from the beginning, Arrow batches);
- end-to-end latency (p50/p99), produce to committed consume, at a fixed moderate rate:
  ``e2e_*`` on a replication-1 topic (acks=leader), ``e2e_rf3_*`` on replication 3
  (acks=all, committed = on the in-sync replicas); ``bench.e2e`` runs this part alone;
- the baseline: pipelined ``XADD`` / ``XREAD`` of the same 100 B records against the
  cluster's own Redis server through redis-py.

Prints a human summary and, as the last line, one JSON object.

Each bulk produce figure is the median of ``--rounds`` timed rounds (default 5) to the
same topic, after one untimed warm-up table; ``produce_rounds`` lists every round's
records/s, ``load_average`` is the machine's just after the bulk phase. One 0.4 s round
is too short to stand alone: a page-cache write into memory the VM's host has taken back
(free page reporting) costs about 10 ms per 4 MB instead of 0.8 ms, so single rounds of
one build vary by 2x. ``produce_spu_cpu_s`` is a second measure the load and the page
cache move less: the CPU seconds (user, system) all SPU processes spent per round (the
mean of the rounds: the kernel counts in 10 ms ticks), where the payload check shows as
user time.

``--frame-validation`` sets the SPUs' payload check (``none``, ``structure``, ``full``,
the default; see ``spark_stream.frame_check``), so the bulk produce path can be measured
with the check on and off: alternate runs of each level and compare ``produce_*_rps``.
``check_{structure,full}_ms_per_round`` and ``check_*_share_of_spu_cpu`` are the
check's cost apart from the load and the page cache: each level's CPU time on one
round's bulk frames in this process (each frame its own bytes, checked once a pass, best
pass), and that over the SPUs' CPU seconds of such a round (``produce_spu_cpu_s``). As
the check runs on the leader's event loop before the append, the share bounds what it
can take from the bulk produce rate when the SPU is the bottleneck.
``--auth`` starts the cluster with client tokens checked (every client presents the
profile's admin token), to measure the same with auth on and off.

Topics are not tiered (an SC's default; ``bench.tier`` measures tiering): a local
cluster tiers every topic by default, and then the leader of the replication-1 topic
is still writing its sealed segments as Parquet while the replication-3 rounds run,
which charged them for the other topic's tiering. ``--tier`` turns the local cluster's
default tier on. ``rf3_vs_rf1`` is ``produce_100b_rf3_rps`` / ``produce_100b_rf1_rps``.

``--tls`` adds, in the same run, a paired comparison (``run_tls``): a plaintext cluster
and one started with TLS on every port (``LocalCluster(tls="tls")``, the certificates
``fluvio cluster start --tls`` makes) run side by side, and each round goes to both, the
order alternating. Keys: ``tls_produce_100b_rf1_rps``/``_rf3_rps`` (bulk produce,
replication over TLS at RF 3) and ``tls_consume_100b_rps``, the same rounds' plaintext
figures ``tls_plain_*``, the ratios ``tls_produce_vs_plain``,
``tls_produce_rf3_vs_plain`` and ``tls_consume_vs_plain``, and the SPUs' CPU seconds
with TLS over without (``tls_produce_spu_cpu_vs_plain``, ``..._rf3_...``).

    .venv/bin/python -m bench.cluster [--records 2000000] [--rounds 5] [--rate 1000] \
        [--frame-validation none] [--tls] [--auth] [--tier]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import psutil
import pyarrow as pa
import redis

from bench.e2e import e2e_figures, e2e_latency, wait_topic
from spark_stream.client import Fluvio, Offset
from spark_stream.frame_check import PAYLOAD_CHECKS, check_payload
from spark_stream.local.cluster import LocalCluster
from spark_stream.records import RECORD_SCHEMA, build_batch, encode_batch, read_header

GOAL_RPS = 1_000_000
CHECK_FRAME_ROWS = 40_000
"""Rows of a bulk frame of 100 B values: about what the producer's 4 MiB batches hold."""


def _values(n: int, size: int) -> pa.Array:
    """``n`` random binary values of ``size`` bytes, built without a Python loop."""
    data = np.random.default_rng(7).integers(0, 256, n * size, dtype=np.uint8).tobytes()
    offsets = np.arange(0, (n + 1) * size, size, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


CpuClock = Callable[[], tuple[float, float]]


class Round(NamedTuple):
    """One timed bulk run: wall seconds and the SPUs' (user, system) CPU seconds."""

    seconds: float
    spu_user: float
    spu_system: float


def spu_cpu(cluster: LocalCluster) -> CpuClock:
    """A clock of the (user, system) CPU seconds the cluster's SPU processes have spent."""
    procs = [psutil.Process(pid) for i in cluster.layout.spu_ids if (pid := cluster.spu_pid(i))]

    def clock() -> tuple[float, float]:
        times = [p.cpu_times() for p in procs]
        return sum(t.user for t in times), sum(t.system for t in times)

    return clock


def _median_round(rounds: list[Round]) -> Round:
    """The round of median wall time (of an even count, the faster middle one): a whole
    round, so its CPU seconds belong to its wall time."""
    return sorted(rounds)[(len(rounds) - 1) // 2]


def bulk_produce(
    fluvio: Fluvio,
    topic: str,
    values: pa.Array,
    total: int,
    acks: str,
    rounds: int = 1,
    cpu: CpuClock | None = None,
) -> list[Round]:
    """Each of ``rounds`` runs producing ``total`` records through ``send_batch`` (each
    flushed), after one untimed table (connections, first frames); ``cpu`` reads the
    SPUs' CPU seconds (zeros without it)."""
    producer = fluvio.topic_producer(
        topic, batch_size=4 << 20, linger_ms=1, acks=acks, max_in_flight=3
    )
    table = pa.table({"value": values})
    producer.send_batch(table, partition=0)
    producer.flush()
    clock = cpu or (lambda: (0.0, 0.0))
    done = []
    for _ in range(rounds):
        user, system = clock()
        start = time.perf_counter()
        sent = 0
        while sent < total:
            producer.send_batch(table, partition=0)
            sent += table.num_rows
        producer.flush()
        elapsed = time.perf_counter() - start
        user_after, system_after = clock()
        done.append(Round(elapsed, user_after - user, system_after - system))
    producer.close()
    return done


def record_produce(fluvio: Fluvio, topic: str, values: list[bytes], acks: str) -> float:
    """Seconds to produce ``values`` one ``send`` each (flushed)."""
    producer = fluvio.topic_producer(topic, batch_size=1 << 20, linger_ms=2, acks=acks)
    start = time.perf_counter()
    for value in values:
        producer.send(None, value, partition=0)
    producer.flush()
    elapsed = time.perf_counter() - start
    producer.close()
    return elapsed


def consume_all(fluvio: Fluvio, topic: str) -> tuple[int, float]:
    """(records, seconds) to stream the partition from the beginning to its end."""
    consumer = fluvio.partition_consumer(topic, 0, max_bytes=4 << 20)
    start = time.perf_counter()
    rows = sum(b.num_rows for b in consumer.stream_batches(Offset.beginning(), stop_at_end=True))
    return rows, time.perf_counter() - start


def redis_baseline(
    url: str, values: list[bytes], password: str | None = None
) -> tuple[float, float]:
    """(XADD records/s, XREAD records/s), pipelined, on the same Redis server."""
    client = redis.Redis.from_url(url, password=password)
    key = "bench:xadd"
    client.delete(key)
    start = time.perf_counter()
    for i in range(0, len(values), 1000):
        pipe = client.pipeline(transaction=False)
        for value in values[i : i + 1000]:
            pipe.xadd(key, {"v": value})
        pipe.execute()
    xadd = len(values) / (time.perf_counter() - start)
    start = time.perf_counter()
    last, read = "0-0", 0
    while read < len(values):
        reply = client.xread({key: last}, count=10_000)
        if not reply:
            break
        assert isinstance(reply, list)  # RESP2: [[key, [(entry_id, fields), ...]]]
        entries = reply[0][1]
        read += len(entries)
        last = entries[-1][0]
    xread = read / (time.perf_counter() - start)
    client.delete(key)
    client.close()
    return xadd, xread


def check_shares(frame_us: dict[str, float], records: int, spu_cpu_s: float) -> dict[str, float]:
    """What the SPUs' payload check costs one bulk round at replication 1: each level's
    microseconds on a frame of ``CHECK_FRAME_ROWS`` rows (``frame_us``, level -> us),
    times the frames a round of ``records`` makes, as milliseconds and as a share of
    ``spu_cpu_s``, the SPUs' CPU seconds a round."""
    frames = records / CHECK_FRAME_ROWS
    out: dict[str, float] = {}
    for level, us in frame_us.items():
        seconds = us * frames / 1e6
        out[f"check_{level}_ms_per_round"] = round(seconds * 1000, 1)
        out[f"check_{level}_share_of_spu_cpu"] = round(seconds / max(spu_cpu_s, 1e-9), 3)
    return out


def _check_frame_us(values: pa.Array, records: int, rounds: int = 3) -> dict[str, float]:
    """Each check level's microseconds a bulk frame, in this process (apart from the load
    and the page cache): one round's frames of ``values``, each its own bytes (so the
    check reads memory no cache holds, as on the SPU), checked once per pass; the best
    pass of ``rounds``."""
    frames = []
    for n in range(max(1, records // CHECK_FRAME_ROWS)):
        start = n * CHECK_FRAME_ROWS % max(len(values) - CHECK_FRAME_ROWS + 1, 1)
        frame = encode_batch(build_batch(values.slice(start, CHECK_FRAME_ROWS)))
        frames.append((memoryview(frame), read_header(frame)))
    out: dict[str, float] = {}
    for level in ("structure", "full"):
        best = float("inf")
        for _ in range(rounds):
            start_s = time.process_time()
            for view, header in frames:
                check_payload(view, header, RECORD_SCHEMA, level)
            best = min(best, time.process_time() - start_s)
        out[level] = best / len(frames) * 1e6
    return out


def _cluster(tmp: Path, validation: str, tier: bool, **options: Any) -> LocalCluster:
    """The benchmark's local cluster (3 SPUs as processes) in ``tmp``, not yet started."""
    return LocalCluster(
        tmp,
        spus=3,
        sc_port=0,
        spu_mode="custom",
        profile=tmp / "profile.json",
        start_timeout=60,
        env={"FLUVIO_SPU_FRAME_VALIDATION": validation},
        default_tier=tier,
        **options,
    )


def paired_order(rounds: int) -> list[tuple[str, str]]:
    """Which side runs first in each round of a paired comparison: plaintext first in
    even rounds, TLS first in odd ones, so neither always runs on the other's warm
    caches or in its wake."""
    return [("plain", "tls") if i % 2 == 0 else ("tls", "plain") for i in range(rounds)]


def run_tls(records: int, validation: str, rounds: int = 5, tier: bool = False) -> dict[str, Any]:
    """Bulk produce (RF 1 and 3) and consume of 100 B records with TLS on and off, paired.

    A plaintext cluster and a TLS cluster run side by side and every round goes to both,
    in turn (``paired_order``), so the machine's load and page cache treat both alike: a
    TLS cluster measured after the plaintext one was at the mercy of what the machine did
    meanwhile (one run's ratio came out 1.44, the plaintext side having run cold). Besides
    wall-time medians, the SPUs' CPU seconds per round on each side (the load moves them
    less), and their ratio.
    """
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-tls-") as tmp:
        clusters = {
            "plain": _cluster(Path(tmp) / "plain", validation, tier),
            "tls": _cluster(Path(tmp) / "tls", validation, tier, tls="tls"),
        }
        try:
            for cluster in clusters.values():
                cluster.start()
            with contextlib.ExitStack() as stack:
                clients = {
                    side: stack.enter_context(
                        Fluvio.connect(cluster.endpoint, timeout=20, tls=cluster.client_tls)
                    )
                    for side, cluster in clusters.items()
                }
                cpus = {side: spu_cpu(cluster) for side, cluster in clusters.items()}
                small = _values(200_000, 100)
                for rf in (1, 3):
                    topic = f"bulk-100b-rf{rf}"
                    for fluvio in clients.values():
                        wait_topic(fluvio, topic, rf)
                    acks = "all" if rf > 1 else "leader"
                    done: dict[str, list[Round]] = {"plain": [], "tls": []}
                    for order in paired_order(rounds):
                        for side in order:
                            done[side] += bulk_produce(
                                clients[side], topic, small, records, acks, 1, cpus[side]
                            )
                    rps = {
                        side: round(records / _median_round(r).seconds) for side, r in done.items()
                    }
                    cpu = {
                        side: sum(x.spu_user + x.spu_system for x in r) for side, r in done.items()
                    }
                    suffix = "" if rf == 1 else "_rf3"
                    results[f"tls_produce_100b_rf{rf}_rps"] = rps["tls"]
                    results[f"tls_plain_produce_100b_rf{rf}_rps"] = rps["plain"]
                    results[f"tls_produce{suffix}_vs_plain"] = round(rps["tls"] / rps["plain"], 2)
                    results[f"tls_produce{suffix}_spu_cpu_vs_plain"] = round(
                        cpu["tls"] / cpu["plain"], 2
                    )
                consumed: dict[str, list[float]] = {"plain": [], "tls": []}
                for order in paired_order(3):
                    for side in order:
                        rows, seconds = consume_all(clients[side], "bulk-100b-rf1")
                        consumed[side].append(rows / seconds)
                consume = {side: round(statistics.median(r)) for side, r in consumed.items()}
                results["tls_consume_100b_rps"] = consume["tls"]
                results["tls_plain_consume_100b_rps"] = consume["plain"]
                results["tls_consume_vs_plain"] = round(consume["tls"] / consume["plain"], 2)
        finally:
            for cluster in clusters.values():
                cluster.stop()
    return results


def run(
    records: int,
    per_record: int,
    rate: float,
    seconds: float,
    validation: str = "full",
    tls: bool = False,
    auth: bool = False,
    rounds: int = 5,
    tier: bool = False,
) -> dict[str, Any]:
    results: dict[str, Any] = {
        "frame_validation": validation,
        "auth": auth,
        "tier": tier,
        "rounds": rounds,
    }
    per_round: dict[str, list[int]] = {}
    spu_seconds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        cluster = _cluster(Path(tmp), validation, tier, auth=auth)
        try:
            cluster.start()
            token = cluster.admin_token
            cpu = spu_cpu(cluster)
            with Fluvio.connect(cluster.endpoint, timeout=20, token=token) as fluvio:
                small = _values(200_000, 100)
                large = _values(50_000, 1000)
                for size, values, total in (
                    ("100b", small, records),
                    ("1kb", large, max(records // 10, 50_000)),
                ):
                    for rf in (1, 3):
                        topic = f"bulk-{size}-rf{rf}"
                        wait_topic(fluvio, topic, rf)
                        acks = "all" if rf > 1 else "leader"
                        done = bulk_produce(fluvio, topic, values, total, acks, rounds, cpu)
                        elapsed = _median_round(done).seconds
                        nbytes = total * (100 if size == "100b" else 1000)
                        per_round[f"{size}_rf{rf}"] = [round(total / r.seconds) for r in done]
                        spu_seconds[f"{size}_rf{rf}"] = [
                            round(sum(r.spu_user for r in done) / rounds, 3),
                            round(sum(r.spu_system for r in done) / rounds, 3),
                        ]
                        results[f"produce_{size}_rf{rf}_rps"] = round(total / elapsed)
                        results[f"produce_{size}_rf{rf}_mbps"] = round(nbytes / elapsed / 1e6, 1)
                results["rf3_vs_rf1"] = round(
                    results["produce_100b_rf3_rps"] / results["produce_100b_rf1_rps"], 3
                )
                results["produce_rounds"] = per_round
                results["produce_spu_cpu_s"] = spu_seconds
                frame_us = _check_frame_us(small, records)
                results |= check_shares(frame_us, records, sum(spu_seconds["100b_rf1"]))
                results["load_average"] = [round(x, 2) for x in os.getloadavg()]
                rows = small.slice(0, per_record).to_pylist()
                for rf in (1, 3):
                    topic = f"send-100b-rf{rf}"
                    wait_topic(fluvio, topic, rf)
                    elapsed = record_produce(fluvio, topic, rows, "all" if rf > 1 else "leader")
                    results[f"send_100b_rf{rf}_rps"] = round(len(rows) / elapsed)
                consumed, elapsed = consume_all(fluvio, "bulk-100b-rf1")
                results["consume_100b_rps"] = round(consumed / elapsed)
                results["consume_100b_mbps"] = round(consumed * 100 / elapsed / 1e6, 1)
                wait_topic(fluvio, "latency-rf1", 1)
                wait_topic(fluvio, "latency-rf3", 3)
            results["e2e_rate_rps"] = rate
            for rf, acks, prefix in ((1, "leader", "e2e"), (3, "all", "e2e_rf3")):
                latencies = asyncio.run(
                    e2e_latency(cluster.endpoint, f"latency-rf{rf}", rate, seconds, acks, token)
                )
                results |= e2e_figures(prefix, latencies)
            xadd, xread = redis_baseline(cluster.layout.redis_url, rows, cluster.redis_password())
            results["redis_xadd_rps"] = round(xadd)
            results["redis_xread_rps"] = round(xread)
            results["bulk_vs_redis_xadd"] = round(results["produce_100b_rf1_rps"] / xadd, 1)
        finally:
            cluster.stop()
    if tls:
        results.update(run_tls(records, validation, rounds, tier))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--records",
        type=int,
        default=2_000_000,
        help="100 B records per bulk run (1 KB runs send a tenth)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="timed bulk runs per figure; the median is reported (default 5)",
    )
    parser.add_argument(
        "--per-record",
        type=int,
        default=200_000,
        help="records of the per-record send runs and the Redis baseline",
    )
    parser.add_argument("--rate", type=float, default=1000.0, help="e2e records/s")
    parser.add_argument("--seconds", type=float, default=5.0, help="e2e duration")
    parser.add_argument(
        "--frame-validation",
        choices=PAYLOAD_CHECKS,
        default="full",
        help="the SPUs' payload check of produced batches (default full)",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help="also measure bulk produce and consume on a cluster with TLS on every port",
    )
    parser.add_argument(
        "--auth", action="store_true", help="client tokens checked by the SC and SPUs"
    )
    parser.add_argument(
        "--tier",
        action="store_true",
        help="topics tiered to the local cluster's default tier (off, as an SC's default)",
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    results = run(
        args.records,
        args.per_record,
        args.rate,
        args.seconds,
        args.frame_validation,
        tls=args.tls,
        auth=args.auth,
        rounds=args.rounds,
        tier=args.tier,
    )
    for key, value in results.items():
        print(f"{key:28s} {value}")
    goal = results["produce_100b_rf1_rps"] >= GOAL_RPS and results["bulk_vs_redis_xadd"] >= 5
    print(
        f"goal (>= {GOAL_RPS} rps bulk rf1, >= 5x XADD, p99 < 10 ms): "
        f"{'met' if goal and results['e2e_p99_ms'] < 10 else 'missed'}"
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
