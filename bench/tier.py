"""Tier benchmark: sealed segments to Parquet and the Delta table, and reading them back.

    .venv/bin/python -m bench.tier [--records 10000000] [--partitions 2]
        [--segment-size 32Mi] [--rate 100] [--repeat 3] [--quick]

One run on a local cluster of one SPU (replication factor 1) whose topic has a tier and
``--table delta``; ``--records`` values of ``VALUE_BYTES`` random bytes are produced at
``--rate`` MB/s (paced; 0: as fast as the producer goes), then the run waits until every
sealed segment is tiered and committed:

- ``produce_mbps``: the produce rate reached (value bytes / s); ``tier_mbps``: sealed
  segment bytes / (produce start to the last Delta commit); ``tier_lag_s``: from the
  end of the produce to the last commit; ``tier_backlog_max_mb``: the most segment bytes
  ever sealed and not yet in the Delta table (from each segment's seal and commit times).
  ``keeps_up_at_100mbps`` is true only when the produce reached 100 MB/s and every
  segment was in the Delta table within ``KEEP_UP_LAG_S`` of sealing (a tier slower than
  the produce leaves each segment waiting longer than the one before; a produce rate
  below 100 MB/s cannot show it: then false, with the rates next to it);
- ``seal_to_delta_p50_s``/``_p99_s``: per segment, from its last write (the ``.log``
  file's mtime: a segment is sealed when the next one starts) to the timestamp of the
  Delta commit that added its file (the commit's ``commitInfo.timestamp``). Tiering runs
  every ``tier_interval_s`` (1 s by default), which bounds the p50 from below;
- ``delta_rps``, ``parquet_rps``, ``fluvio_rps``: records/s of
  ``sum(length(value))`` over the tiered rows: the Delta table, a plain Parquet scan of
  the same files (``spark.read.parquet(tier)``), and ``format("fluvio")`` bounded to the
  same offsets (served from the SPU; ``fluvio_source`` says whether the JVM connector or
  the Python source served it: the JVM one when its jar is built). Each query is run
  as a user runs it, the DataFrame made from the path each time: a Delta read looks up
  the table's current files on every query (a Spark job over its log state, about
  0.1 s here) and a plain Parquet read lists the directory when it is made, so a
  Parquet DataFrame made once would skip its listing and see no file added since.
  ``delta_reused_rps`` and ``parquet_reused_rps`` are the same queries on one
  DataFrame made before the runs (``delta_reused_ratio_to_parquet`` their ratio). Each
  query must return the same checksum; the figure is the best of three rounds of
  ``--repeat`` runs after a warm-up of each (``bench._rates``; each round starts with
  another query), as ``bench.spark`` measures.
  ``delta_ratio_to_parquet`` = delta / parquet (the goal: at least 0.9).
  ``delta_query_overhead_s`` / ``parquet_query_overhead_s``: the best time of the same
  query over no file (``where partition < 0``): what each costs before reading a byte
  (Delta's snapshot check and the job that lists its files from the log state), which
  decides the ratio on small tables;
- ``tier_bytes_per_record`` (zstd Parquet files) and ``spu_bytes_per_record`` (the sealed
  segments' ``.log`` files) over the same records.

``load_average`` is the machine's at the end: figures from a loaded machine compare
within one run only. Progress goes to stderr; the last line printed is one JSON object
with every figure.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench._rates import best_times, jvm_cpu_seconds

VALUE_BYTES = 100
TOPIC = "bench-tier"
GOAL_MBPS = 100.0
KEEP_UP_LAG_S = 3.0
"""A segment in the Delta table later than this after sealing counts as falling behind: a
tier round's period (1 s) plus writing and committing one segment, with margin."""
CHUNK = 50_000
"""Records per produced batch (5 MB of values)."""
POOL = 8
"""Distinct random chunks produced in turn (generating them while producing would cost
the producer a good part of a core at 100 MB/s); 40 MB apart, far beyond what a Parquet
page's zstd could find again."""
QUICK = {"records": 200_000, "segment_size": 1 << 20, "repeat": 1, "rate": 0.0}


def _say(message: str) -> None:
    print(f"[bench.tier] {message}", file=sys.stderr, flush=True)


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(float(np.percentile(values, q)), 3)


def _chunks(count: int) -> list[pa.Table]:
    from spark_stream.records import null_headers

    rng = np.random.default_rng(11)
    offsets = pa.array(np.arange(0, (CHUNK + 1) * VALUE_BYTES, VALUE_BYTES, dtype=np.int32))
    out = []
    for _ in range(count):
        raw = rng.integers(0, 256, size=CHUNK * VALUE_BYTES, dtype=np.uint8).tobytes()
        values = pa.BinaryArray.from_buffers(
            pa.binary(), CHUNK, [None, offsets.buffers()[1], pa.py_buffer(raw)]
        )
        out.append(pa.table({"value": values, "headers": null_headers(CHUNK)}))
    return out


def _produce(client: Any, records: int, partitions: int, rate_mbps: float) -> float:
    """Produce ``records`` values round-robin over the partitions at ``rate_mbps`` (0: as
    fast as it goes); return seconds."""
    pool = _chunks(min(POOL, -(-records // CHUNK)))
    producer = client.topic_producer(TOPIC, acks="leader", linger_ms=0)
    started = time.perf_counter()
    futures = []
    for n, first in enumerate(range(0, records, CHUNK)):
        if rate_mbps > 0:  # paced: chunk n leaves when the rate says so
            delay = started + first * VALUE_BYTES / (rate_mbps * 1e6) - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        table = pool[n % len(pool)].slice(0, min(CHUNK, records - first))
        futures.append(producer.send_batch(table, partition=n % partitions))
        if len(futures) >= 8:
            futures.pop(0).result(timeout=300)
    for future in futures:
        future.result(timeout=300)
    producer.close()
    return time.perf_counter() - started


def backlog_max(segments: list[tuple[float, float, int]]) -> int:
    """The most bytes ever sealed and not yet committed, of ``(sealed_at, committed_at,
    bytes)`` per segment (a segment counts from its seal up to its commit)."""
    events = sorted(
        [(sealed, size) for sealed, _, size in segments]
        + [(committed, -size) for _, committed, size in segments],
        key=lambda e: (e[0], e[1]),  # at equal times the commit first
    )
    level = peak = 0
    for _, change in events:
        level += change
        peak = max(peak, level)
    return peak


def keeps_up(produce_mbps: float, latencies: list[float], goal_mbps: float, lag_s: float) -> bool:
    """Whether tiering kept up with a produce of ``goal_mbps``: the produce reached it and
    every segment was committed within ``lag_s`` of sealing (none, no evidence: False)."""
    return produce_mbps >= goal_mbps and bool(latencies) and max(latencies) <= lag_s


def _sealed(replica: Path) -> list[tuple[int, int, Path]]:
    """``(base, next, log file)`` of the sealed segments of a replica directory."""
    from spu.storage.layout import list_segment_bases

    bases = list_segment_bases(replica)
    return [
        (base, nxt, replica / f"{base:020d}.log")
        for base, nxt in zip(bases, bases[1:], strict=False)
    ]


def _commit_times(tier: Path) -> dict[str, float]:
    """Each added file's commit time (s since the epoch), from the Delta log."""
    out: dict[str, float] = {}
    for entry in sorted((tier / "_delta_log").glob("*.json")):
        stamp = None
        paths = []
        for line in entry.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                stamp = action["commitInfo"]["timestamp"] / 1000
            elif "add" in action:
                paths.append(action["add"]["path"])
        for path in paths:
            if stamp is not None:
                out.setdefault(path, stamp)
    return out


def _caught_up(tier: Path, replicas: dict[int, Path]) -> bool:
    from spark_stream.tier import load_manifest
    from spu.storage.delta_table import committed_version

    for p, replica in replicas.items():
        sealed = _sealed(replica)
        if not sealed:
            continue
        files = load_manifest(str(tier), p).files
        if not files or files[-1].next_offset < sealed[-1][1]:
            return False
        if committed_version(str(tier), p) != files[-1].base_offset:
            return False
    return True


def _sum_lengths(df: Any) -> int:
    return int(df.selectExpr("sum(length(value)) AS n").collect()[0]["n"] or 0)


def _load_and_sum(load: Callable[[], Any]) -> int:
    """The query as a user runs it: the DataFrame made from the path, then summed."""
    return _sum_lengths(load())


def _tier_cpu(replicas: dict[int, Path], scratch: Path) -> dict[str, Any]:
    """The tier path's own cost, apart from the machine's load: the sealed segments tiered
    again in this process (``spu.tiering.tier_slices``: Parquet file, manifest, Delta
    commit) into ``scratch``, timed by CPU seconds. ``tier_cpu_mbps`` is segment MB per
    CPU-second: the share of one core tiering takes at a produce rate is rate / it."""
    from spark_stream.records import RECORD_SCHEMA
    from spark_stream.tier import TierManifest
    from spu.delta_hook import DeltaTableHook
    from spu.storage.slices import LogSlice
    from spu.tiering import tier_slices

    url = str(scratch)
    hook = DeltaTableHook(url)
    total = 0
    cpu = wall = 0.0
    for p, replica in replicas.items():
        manifest = TierManifest(partition=p)
        for base, nxt, log in _sealed(replica):
            data = log.read_bytes()
            piece = LogSlice(base, base, nxt, memoryview(data))
            cpu0, wall0 = time.process_time(), time.perf_counter()
            outcome = tier_slices(url, manifest, [piece], RECORD_SCHEMA, hook)
            cpu += time.process_time() - cpu0
            wall += time.perf_counter() - wall0
            if outcome.error is not None:
                raise AssertionError(f"tiering again failed: {outcome.error}")
            manifest = outcome.manifest
            total += len(data)
    return {
        "tier_cpu_mbps": round(total / max(cpu, 1e-9) / 1e6, 1),
        "tier_wall_mbps": round(total / max(wall, 1e-9) / 1e6, 1),
    }


def _tier_figures(
    tier: Path,
    replicas: dict[int, Path],
    records: int,
    started: float,
    produced_at: float,
    produce_mbps: float,
) -> tuple[dict[str, Any], dict[int, Any]]:
    """The tiering figures, once caught up; also each partition's manifest."""
    from spark_stream.tier import load_manifest

    commits = _commit_times(tier)
    last_commit = max(commits.values(), default=produced_at)
    sealed = {p: _sealed(r) for p, r in replicas.items()}
    segments = [
        (log.stat().st_mtime, commits[f"partition={p}/{base:020d}.parquet"], log.stat().st_size)
        for p, segs in sealed.items()
        for base, _, log in segs
        if f"partition={p}/{base:020d}.parquet" in commits
    ]
    latencies = [committed - sealed_at for sealed_at, committed, _ in segments]
    sealed_bytes = sum(log.stat().st_size for s in sealed.values() for _, _, log in s)
    tiered_records = sum(nxt for s in sealed.values() for _, nxt, _ in s[-1:])
    manifests = {p: load_manifest(str(tier), p) for p in replicas}
    tier_bytes = sum(e.bytes for m in manifests.values() for e in m.files)
    tier_records = sum(e.records for m in manifests.values() for e in m.files)
    if tier_records != tiered_records:
        raise AssertionError(f"the tier holds {tier_records} records, sealed {tiered_records}")
    figures = {
        "records": records,
        "tiered_records": tier_records,
        "produce_mbps": round(produce_mbps, 1),
        "tier_mbps": round(sealed_bytes / max(last_commit - started, 1e-9) / 1e6, 1),
        "tier_lag_s": round(max(0.0, last_commit - produced_at), 2),
        "tier_backlog_max_mb": round(backlog_max(segments) / 1e6, 1),
        "keeps_up_at_100mbps": keeps_up(produce_mbps, latencies, GOAL_MBPS, KEEP_UP_LAG_S),
        "seal_to_delta_p50_s": _percentile(latencies, 50),
        "seal_to_delta_p99_s": _percentile(latencies, 99),
        "seal_to_delta_max_s": round(max(latencies), 3) if latencies else None,
        "segments": len(latencies),
        "tier_file_mb": round(tier_bytes / max(len(segments), 1) / 1e6, 1),
        "tier_bytes_per_record": round(tier_bytes / max(tier_records, 1), 1),
        "spu_bytes_per_record": round(sealed_bytes / max(tiered_records, 1), 1),
    }
    return figures, manifests


def _read_figures(
    endpoint: str, tier: Path, manifests: dict[int, Any], tier_records: int, repeat: int
) -> dict[str, Any]:
    """Spark reading the tiered rows three ways (module docstring)."""
    from datasource.connector_jar import jar_path
    from datasource.session import local_session

    spark = local_session("bench-tier", delta=True)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        ends = json.dumps({TOPIC: {str(p): m.end_offset or 0 for p, m in manifests.items()}})
        loaders: dict[str, Callable[[], Any]] = {
            "delta": lambda: spark.read.format("delta").load(str(tier)),
            "parquet": lambda: spark.read.parquet(str(tier)),
            "fluvio": lambda: (
                spark.read.format("fluvio")
                .option("endpoint", endpoint)
                .option("topic", TOPIC)
                .option("startingOffsets", "earliest")
                .option("endingOffsets", ends)
                .load()
            ),
        }
        frames = {label: loaders[label]() for label in ("delta", "parquet")}
        runs = {label: functools.partial(_load_and_sum, load) for label, load in loaders.items()}
        runs |= {
            f"{label}_reused": functools.partial(_sum_lengths, df) for label, df in frames.items()
        }
        clocks = {"wall": time.perf_counter, "cpu": jvm_cpu_seconds}
        expected = dict.fromkeys(runs, tier_records * VALUE_BYTES)
        best = best_times(runs, expected, repeat, rounds=3, prefix="bench.tier", clocks=clocks)
        empty = {
            label: functools.partial(_sum_lengths, frames[label].where("partition < 0"))
            for label in ("delta", "parquet")
        }
        idle = best_times(
            empty, dict.fromkeys(empty, 0), repeat, prefix="bench.tier", clocks=clocks
        )
    finally:
        spark.stop()
    out: dict[str, Any] = {
        f"{label}_rps": round(tier_records / s) for label, s in best["wall"].items()
    }
    for kind in ("", "_reused"):
        delta, parquet = f"delta{kind}", f"parquet{kind}"
        out[f"delta{kind}_ratio_to_parquet"] = round(best["wall"][parquet] / best["wall"][delta], 3)
        out[f"delta{kind}_cpu_ratio_to_parquet"] = round(
            best["cpu"][parquet] / best["cpu"][delta], 3
        )
    for label in ("delta", "parquet"):
        out[f"{label}_jvm_cpu_s"] = round(best["cpu"][label], 3)
        out[f"{label}_query_overhead_s"] = round(idle["wall"][label], 3)
        out[f"{label}_query_overhead_cpu_s"] = round(idle["cpu"][label], 3)
    out["fluvio_source"] = "jvm" if jar_path() is not None else "python"
    return out


def run(
    records: int,
    partitions: int,
    segment_size: int,
    repeat: int,
    rate_mbps: float,
    workdir: Path,
) -> dict[str, Any]:
    """Run every measurement; return the figures."""
    os.environ["FLUVIO_PROFILE"] = str(workdir / "profile.json")
    from spark_stream.client import Fluvio
    from spark_stream.local.cluster import LocalCluster
    from spu.storage.layout import replica_dir

    cluster = LocalCluster(
        workdir / "cluster", spus=1, sc_port=0, spu_mode="custom", start_timeout=60.0
    )
    cluster.start()
    try:
        endpoint = cluster.endpoint
        with Fluvio.connect(endpoint) as client:
            admin = client.admin()
            admin.create_topic(
                TOPIC, partitions=partitions, segmentSize=segment_size, table="delta"
            )
            _wait(
                lambda: (
                    len(client.topic_partitions(TOPIC)) == partitions
                    and all(i.leader_endpoint for i in client.topic_partitions(TOPIC))
                ),
                60,
                "the topic's leaders",
            )
            tier = Path(str(admin.describe_topic(TOPIC)[0].spec.tier))
            replicas = {
                part.index: replica_dir(cluster.spu_dir(int(part.status.leader)), TOPIC, part.index)
                for part in admin.list_partitions(TOPIC)
                if part.status.leader is not None
            }
            started = time.time()
            seconds = _produce(client, records, partitions, rate_mbps)
            produced_at = time.time()
            produce_mbps = records * VALUE_BYTES / seconds / 1e6
            _say(f"produced {records:,} records in {seconds:.1f}s ({produce_mbps:.1f} MB/s)")
            _wait(lambda: _caught_up(tier, replicas), 600, "tiering and Delta commits")
            result, manifests = _tier_figures(
                tier, replicas, records, started, produced_at, produce_mbps
            )
            result.update(partitions=partitions, segment_size=segment_size, rate_mbps=rate_mbps)
            result.update(_tier_cpu(replicas, workdir / "scratch-tier"))
            _say(f"tiering: {result}")
            result.update(
                _read_figures(endpoint, tier, manifests, result["tiered_records"], repeat)
            )
            result["load_average"] = [round(x, 2) for x in os.getloadavg()]
            return result
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; the last line printed is the JSON of the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.tier", description=__doc__)
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--segment-size", default="32Mi", help="e.g. 32Mi, 1Mi")
    parser.add_argument("--rate", type=float, default=GOAL_MBPS, help="MB/s, 0: unpaced")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to iterate with")
    args = parser.parse_args(argv)
    from spark_stream.models import parse_size

    records, repeat, rate = args.records, args.repeat, args.rate
    segment_size = parse_size(args.segment_size)
    if args.quick:
        records, repeat = int(QUICK["records"]), int(QUICK["repeat"])
        segment_size, rate = int(QUICK["segment_size"]), float(QUICK["rate"])
    workdir = Path(tempfile.mkdtemp(prefix="bench-tier-"))
    try:
        result = run(records, args.partitions, segment_size, repeat, rate, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
