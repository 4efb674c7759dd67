"""Tier benchmark: sealed segments to Parquet and the Delta table, and reading them back.

    .venv/bin/python -m bench.tier [--records 2000000] [--partitions 2]
        [--segment-size 16Mi] [--repeat 3] [--quick]

One run on a local cluster of one SPU (replication factor 1) whose topic has a tier and
``--table delta``; ``--records`` values of ``VALUE_BYTES`` bytes are produced as fast as
the producer goes, then the run waits until every sealed segment is tiered and committed:

- ``produce_mbps``: the produce rate reached (value bytes / s), and ``tier_mbps``: sealed
  segment bytes / (produce start to the last Delta commit); ``tier_lag_s``: from the
  end of the produce to the last commit. ``keeps_up_at_100mbps`` is true only when the
  produce rate reached 100 MB/s and tiering finished within ``KEEP_UP_LAG_S`` of it
  (a produce rate below 100 MB/s cannot show it: then false, with the rates next to it);
- ``seal_to_delta_p50_s``/``_p99_s``: per segment, from its last write (the ``.log``
  file's mtime: a segment is sealed when the next one starts) to the timestamp of the
  Delta commit that added its file (the commit's ``commitInfo.timestamp``). Tiering runs
  every ``tier_interval_s`` (1 s by default), which bounds the p50 from below;
- ``delta_rps``, ``parquet_rps``, ``fluvio_rps``: records/s of
  ``sum(length(value))`` over the tiered rows: the Delta table, a plain Parquet scan of
  the same files (``spark.read.parquet(tier)``), and ``format("fluvio")`` bounded to the
  same offsets (served from the SPU); ``delta_ratio_to_parquet`` = delta / parquet (the
  goal: at least 0.9); best of ``--repeat`` after a warm-up;
- ``tier_bytes_per_record`` (zstd Parquet files) and ``spu_bytes_per_record`` (the sealed
  segments' ``.log`` files) over the same records.

Progress goes to stderr; the last line printed is one JSON object with every figure.
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

VALUE_BYTES = 100
TOPIC = "bench-tier"
KEEP_UP_LAG_S = 5.0
QUICK = {"records": 100_000, "segment_size": 1 << 20, "repeat": 1}


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


def _produce(client: Any, records: int, partitions: int) -> float:
    """Produce ``records`` values round-robin over the partitions; return seconds."""
    from spark_stream.records import null_headers

    rng = np.random.default_rng(11)
    producer = client.topic_producer(TOPIC, acks="leader", linger_ms=0)
    chunk = 50_000
    started = time.perf_counter()
    futures = []
    for n, first in enumerate(range(0, records, chunk)):
        count = min(chunk, records - first)
        raw = rng.integers(0, 256, size=count * VALUE_BYTES, dtype=np.uint8).tobytes()
        offsets = pa.array(np.arange(0, (count + 1) * VALUE_BYTES, VALUE_BYTES, dtype=np.int32))
        values = pa.BinaryArray.from_buffers(
            pa.binary(), count, [None, offsets.buffers()[1], pa.py_buffer(raw)]
        )
        table = pa.table({"value": values, "headers": null_headers(count)})
        futures.append(producer.send_batch(table, partition=n % partitions))
        if len(futures) >= 8:
            futures.pop(0).result(timeout=300)
    for future in futures:
        future.result(timeout=300)
    producer.close()
    return time.perf_counter() - started


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


def _best(run: Callable[[], int], expected: int, records: int, repeat: int, label: str) -> float:
    run()  # warm-up
    best = 0.0
    for i in range(repeat):
        started = time.perf_counter()
        total = run()
        seconds = time.perf_counter() - started
        if total != expected:
            raise AssertionError(f"{label}: sum(length(value)) = {total}, expected {expected}")
        best = max(best, records / seconds)
        _say(f"{label} run {i + 1}: {seconds:.2f}s, {records / seconds:,.0f} records/s")
    return best


def run(
    records: int, partitions: int, segment_size: int, repeat: int, workdir: Path
) -> dict[str, Any]:
    """Run every measurement; return the figures."""
    os.environ["FLUVIO_PROFILE"] = str(workdir / "profile.json")
    from datasource.session import local_session
    from spark_stream.client import Fluvio
    from spark_stream.local.cluster import LocalCluster
    from spark_stream.tier import load_manifest
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
            seconds = _produce(client, records, partitions)
            produced_at = time.time()
            produce_mbps = records * VALUE_BYTES / seconds / 1e6
            _say(f"produced {records:,} records in {seconds:.1f}s ({produce_mbps:.1f} MB/s)")
            _wait(lambda: _caught_up(tier, replicas), 600, "tiering and Delta commits")
            commits = _commit_times(tier)
            last_commit = max(commits.values(), default=produced_at)
            sealed = {p: _sealed(r) for p, r in replicas.items()}
            sealed_bytes = sum(log.stat().st_size for s in sealed.values() for _, _, log in s)
            latencies = [
                commits[f"partition={p}/{base:020d}.parquet"] - log.stat().st_mtime
                for p, segs in sealed.items()
                for base, _, log in segs
                if f"partition={p}/{base:020d}.parquet" in commits
            ]
            tiered_records = sum(nxt for s in sealed.values() for _, nxt, _ in s[-1:])
            manifests = {p: load_manifest(str(tier), p) for p in range(partitions)}
            tier_bytes = sum(e.bytes for m in manifests.values() for e in m.files)
            tier_records = sum(e.records for m in manifests.values() for e in m.files)
            tier_mbps = sealed_bytes / max(last_commit - started, 1e-9) / 1e6
            lag = max(0.0, last_commit - produced_at)
            result: dict[str, Any] = {
                "records": records,
                "partitions": partitions,
                "segment_size": segment_size,
                "produce_mbps": round(produce_mbps, 1),
                "tier_mbps": round(tier_mbps, 1),
                "tier_lag_s": round(lag, 2),
                "keeps_up_at_100mbps": produce_mbps >= 100 and lag <= KEEP_UP_LAG_S,
                "seal_to_delta_p50_s": _percentile(latencies, 50),
                "seal_to_delta_p99_s": _percentile(latencies, 99),
                "segments": len(latencies),
                "tier_bytes_per_record": round(tier_bytes / max(tier_records, 1), 1),
                "spu_bytes_per_record": round(sealed_bytes / max(tiered_records, 1), 1),
            }
            _say(f"tiered {tier_records:,} records in {len(latencies)} files; {result}")

            spark = local_session("bench-tier", delta=True)
            spark.sparkContext.setLogLevel("ERROR")
            try:
                ends = {
                    str(p): m.end_offset or 0 for p, m in manifests.items()
                }  # the tiered rows only, on every path
                fluvio_df = (
                    spark.read.format("fluvio").option("endpoint", endpoint).option("topic", TOPIC)
                    .option("startingOffsets", "earliest")
                    .option("endingOffsets", json.dumps({TOPIC: ends})).load()
                )  # fmt: skip
                frames = {
                    "delta": spark.read.format("delta").load(str(tier)),
                    "parquet": spark.read.parquet(str(tier)),
                    "fluvio": fluvio_df,
                }
                expected = tier_records * VALUE_BYTES
                for label, df in frames.items():
                    total = functools.partial(_sum_lengths, df)
                    rate = _best(total, expected, tier_records, repeat, label)
                    result[f"{label}_rps"] = round(rate)
                result["delta_ratio_to_parquet"] = round(
                    result["delta_rps"] / max(result["parquet_rps"], 1), 3
                )
            finally:
                spark.stop()
            result["load_average"] = [round(x, 2) for x in os.getloadavg()]
            return result
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; the last line printed is the JSON of the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.tier", description=__doc__)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--segment-size", default="16Mi", help="e.g. 16Mi, 1Mi")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to iterate with")
    args = parser.parse_args(argv)
    from spark_stream.models import parse_size

    records, repeat = args.records, args.repeat
    segment_size = parse_size(args.segment_size)
    if args.quick:
        records, segment_size, repeat = QUICK["records"], QUICK["segment_size"], QUICK["repeat"]
    workdir = Path(tempfile.mkdtemp(prefix="bench-tier-"))
    try:
        result = run(records, args.partitions, segment_size, repeat, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
