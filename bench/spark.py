"""Spark benchmark: ``format("fluvio")`` on the JVM and Python paths, against Parquet.

    .venv/bin/python -m bench.spark [--records 5000000] [--partitions 4] [--repeat 3]
        [--samples 200] [--stream-samples 400] [--quick]

One run, one data set (``--records`` records of 100-byte values in a ``--partitions``
partition topic on a local three-SPU cluster), one Spark session that has the JVM
connector's jar (``local_session(jvm_connector=True)``; built when missing and Maven is
installed, else every JVM figure is null):

- ``jvm_rps``: ``spark.read.format("fluvio")...selectExpr("sum(length(value))")``, which
  the JVM connector serves in a session with its jar;
- ``python_rps``: the same query through the Python data source, registered in the same
  session under a second name (``fluvio_python``), since the JVM one wins ``fluvio``;
- ``ceiling_rps``: the same query over ``fluvio_ceiling`` (``bench/_ceiling_source.py``),
  a trivial Python data source yielding the same Arrow batches from memory: what Spark's
  Python data source path itself allows on this machine;
- ``parquet_rps``: the same query over the same records written as Parquet;
- ``available_now_rps`` / ``available_now_jvm_rps``: a streaming ``availableNow`` query
  over the whole topic on the Python / JVM path (noop sink), start to end, so it includes
  the query's start-up (about a second); best of 3;
- ``e2e_p50_ms``/``e2e_p99_ms`` (also ``microbatch_p99_ms``): produce-to-``foreachBatch``
  latency of single records into an idle topic, Python path, with
  ``trigger(processingTime="0 seconds")``; ``microbatch_jvm_p50_ms``/``_p99_ms``: the same
  through the JVM connector;
- ``continuous_p50_ms``/``_p99_ms`` (``Trigger.Continuous``) and ``realtime_p50_ms``/
  ``_p99_ms`` (``trigger(realTime=...)``): JVM connector, from ``send()`` to the moment
  the sink's writer takes the row, stamped on the JVM with the sender's clock
  (``bench/_spark_latency.py`` says how); ``--stream-samples`` records at about 60/s
  after a warm-up, the real-time ones within one batch. Next to them,
  ``continuous_ack_p99_ms``/``realtime_ack_p99_ms``: the same records' ``send()`` to
  the producer's ack, the cluster's share; and ``realtime_boundary_max_ms``: the worst
  latency of records sent across a real-time batch's end.

``load_average`` is the machine's (1, 5, 15 minutes) at the end of the run: the figures
are only as good as the machine was idle. ``--quick`` runs few records and samples (about
a minute) to iterate with.

Batch figures are the best of two rounds of ``--repeat`` runs each, after one warm-up
(a round runs each query ``--repeat`` times in a row, so a slow spell of the shared
machine cannot decide a figure alone). Progress goes to
stderr; the last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench._rates import best_rates

VALUE_BYTES = 100
TOPIC = "bench"
PYTHON_FORMAT = "fluvio_python"
"""The Python data source's name in the bench session, where the JVM one serves "fluvio"."""
LATENCY_TOPICS = {
    "microbatch": "bench-latency",
    "microbatch_jvm": "bench-latency-jvm",
    "continuous": "bench-latency-continuous",
    "realtime": "bench-latency-realtime",
}
"""One idle one-partition topic per latency figure, so no query sees another's records."""
QUICK = {"records": 200_000, "repeat": 1, "samples": 30, "stream_samples": 100}
"""``--quick``: a run of about a minute, to iterate with."""
JVM_STREAM_KEYS = (
    "available_now_jvm_rps",
    "microbatch_jvm_p50_ms",
    "microbatch_jvm_p99_ms",
    "continuous_p50_ms",
    "continuous_p99_ms",
    "realtime_p50_ms",
    "realtime_p99_ms",
    "continuous_ack_p99_ms",
    "realtime_ack_p99_ms",
    "realtime_boundary_max_ms",
)
"""Figures of JVM streams: null in a run without the connector's jar."""


def _say(message: str) -> None:
    print(f"[bench.spark] {message}", file=sys.stderr, flush=True)


def _values(n: int, rng: np.random.Generator) -> pa.Array:
    data = rng.integers(0, 256, n * VALUE_BYTES, dtype=np.uint8)
    offsets = np.arange(0, (n + 1) * VALUE_BYTES, VALUE_BYTES, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout}s")
        time.sleep(0.05)  # bounded poll of the cluster


def _topic_ready(client: Any, topic: str, partitions: int) -> bool:
    try:
        infos = client.topic_partitions(topic)
        if len(infos) != partitions or any(i.leader is None for i in infos):
            return False
        for info in infos:
            client.fetch_offsets(topic, info.partition)
    except Exception:
        return False
    return True


def _produce(client: Any, records: int, partitions: int) -> float:
    """Produce ``records`` 100-byte values evenly over the partitions; return seconds."""
    from spark_stream.records import null_headers

    rng = np.random.default_rng(7)
    producer = client.topic_producer(TOPIC, acks="leader", linger_ms=0)
    chunk = 250_000
    started = time.perf_counter()
    futures = []
    for first in range(0, records, chunk):
        n = min(chunk, records - first)
        table = pa.table({"value": _values(n, rng), "headers": null_headers(n)})
        futures.append(producer.send_batch(table, partition=(first // chunk) % partitions))
        if len(futures) >= 8:
            futures.pop(0).result(timeout=300)
    for future in futures:
        future.result(timeout=300)
    producer.close()
    return time.perf_counter() - started


def _sum_lengths(df: Any) -> int:
    return int(df.selectExpr("sum(length(value)) AS n").collect()[0]["n"])


def _available_now(spark: Any, fmt: str, endpoint: str, records: int, checkpoint: Path) -> float:
    df = (
        spark.readStream.format(fmt).option("endpoint", endpoint).option("topic", TOPIC)
        .option("startingOffsets", "earliest").load()
    )  # fmt: skip
    started = time.perf_counter()
    query = (
        df.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination(1800)
    seconds = time.perf_counter() - started
    read = sum(p["numInputRows"] for p in query.recentProgress)
    if read != records:
        raise AssertionError(f"availableNow read {read} records, expected {records}")
    _say(
        f"availableNow {fmt}: {read} records in {seconds:.2f}s "
        f"({len(query.recentProgress)} micro-batches)"
    )
    return records / seconds


def _connector_jar() -> Path | None:
    """The JVM connector's jar: built when missing or stale if Maven is here, else as is."""
    from datasource.connector_jar import build_jar, jar_path

    if shutil.which("mvn") is None:
        return jar_path()
    return build_jar()


def _python_source() -> type:
    """The Python data source under ``PYTHON_FORMAT``, to measure it next to the JVM one."""
    from datasource.source import FluvioDataSource

    class PythonFluvio(FluvioDataSource):
        @classmethod
        def name(cls) -> str:
            return PYTHON_FORMAT

    return PythonFluvio


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def _latency_figures(name: str, latencies: list[float], samples: int) -> dict[str, Any]:
    """``{name}_samples``, ``{name}_p50_ms`` and ``{name}_p99_ms`` (null without samples)."""
    if len(latencies) < samples:
        _say(f"{name}: {samples - len(latencies)} of {samples} records not seen")
    if latencies:
        p50, p99 = statistics.median(latencies), _percentile(latencies, 99)
        _say(f"{name}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, {len(latencies)} samples")
    return {
        f"{name}_samples": len(latencies),
        f"{name}_p50_ms": statistics.median(latencies) if latencies else None,
        f"{name}_p99_ms": _percentile(latencies, 99) if latencies else None,
    }


def _streams(
    spark: Any, client: Any, endpoint: str, records: int, samples: int, stream_samples: int,
    jvm: bool, workdir: Path,
) -> dict[str, Any]:  # fmt: skip
    """The streaming figures: ``availableNow`` throughput and produce-to-sink latencies."""
    from bench import _spark_latency as latency

    formats = {"": PYTHON_FORMAT, "_jvm": "fluvio"} if jvm else {"": PYTHON_FORMAT}
    out: dict[str, Any] = {}
    for suffix, fmt in formats.items():
        out[f"available_now{suffix}_rps"] = max(
            _available_now(spark, fmt, endpoint, records, workdir / f"now{suffix}-{i}")
            for i in range(3)  # the first starts the Python worker or warms the JVM path
        )
        name = f"microbatch{suffix}"
        latencies = latency.microbatch(
            spark, client, fmt, endpoint, LATENCY_TOPICS[name], workdir / name, samples
        )
        out.update(_latency_figures("e2e" if not suffix else name, latencies, samples))
    out["microbatch_p99_ms"] = out["e2e_p99_ms"]
    if not jvm:
        return out
    clock = latency.shared_clock(spark)
    _say(f"continuous and real-time latencies: send and sink stamps read {clock.name}")
    for mode in ("continuous", "realtime"):
        rows = latency.row_at_a_time(
            spark, client, endpoint, LATENCY_TOPICS[mode], workdir / mode, stream_samples, mode,
            clock,
        )  # fmt: skip
        out.update(_latency_figures(mode, rows.sink, stream_samples))
        out[f"{mode}_ack_p99_ms"] = _percentile(rows.ack, 99)
    boundary = rows.boundary  # the real-time query's
    out["realtime_boundary_max_ms"] = max(boundary) if boundary else None
    worst = max(boundary, default=0.0)
    _say(f"realtime: {len(boundary)} records sent around a batch end, worst {worst:.0f} ms")
    return out


def run(
    records: int, partitions: int, repeat: int, samples: int, stream_samples: int, workdir: Path
) -> dict[str, Any]:
    """Run every measurement; return the figures."""
    os.environ["FLUVIO_PROFILE"] = str(workdir / "profile.json")
    from bench._ceiling_source import CeilingDataSource
    from datasource.session import local_session
    from spark_stream.client import Fluvio
    from spark_stream.local.cluster import LocalCluster

    cluster = LocalCluster(
        workdir / "cluster", spus=3, sc_port=0, spu_mode="custom", start_timeout=60.0
    )
    cluster.start()
    try:
        endpoint = cluster.endpoint
        with Fluvio.connect(endpoint) as client:
            client.admin().create_topic(TOPIC, partitions=partitions)
            for topic in LATENCY_TOPICS.values():
                client.admin().create_topic(topic, partitions=1)
            for topic, count in [(TOPIC, partitions)] + [(t, 1) for t in LATENCY_TOPICS.values()]:
                _wait(functools.partial(_topic_ready, client, topic, count), 60, topic)
            seconds = _produce(client, records, partitions)
            _say(
                f"produced {records:,} records of {VALUE_BYTES} B in {seconds:.1f}s "
                f"({records / seconds:,.0f}/s)"
            )
            jar = _connector_jar()
            _say(f"JVM connector jar: {jar}" if jar else "no JVM connector jar: jvm figures null")
            spark = local_session("bench-spark", jvm_connector=jar is not None)
            spark.sparkContext.setLogLevel("ERROR")
            try:
                spark.dataSource.register(CeilingDataSource)
                spark.dataSource.register(_python_source())
                fluvio_df = (
                    spark.read.format("fluvio").option("endpoint", endpoint)
                    .option("topic", TOPIC).load()
                )  # fmt: skip
                python_df = (
                    spark.read.format(PYTHON_FORMAT).option("endpoint", endpoint)
                    .option("topic", TOPIC).load()
                )  # fmt: skip
                ceiling_df = (
                    spark.read.format("fluvio_ceiling").option("records", str(records))
                    .option("partitions", str(partitions)).load()
                )  # fmt: skip
                parquet_dir = workdir / "parquet"
                fluvio_df.write.parquet(str(parquet_dir))
                parquet_df = spark.read.parquet(str(parquet_dir))
                result: dict[str, Any] = {"records": records, "partitions": partitions}
                runs: dict[str, Callable[[], int]] = {
                    "python": lambda: _sum_lengths(python_df),
                    "ceiling": lambda: _sum_lengths(ceiling_df),
                    "parquet": lambda: _sum_lengths(parquet_df),
                }
                if jar is not None:
                    runs = {"jvm": lambda: _sum_lengths(fluvio_df), **runs}
                rates = best_rates(runs, records, VALUE_BYTES, repeat, prefix="bench.spark")
                result.update({f"{label}_rps": rate for label, rate in rates.items()})
                result.update(
                    _streams(
                        spark,
                        client,
                        endpoint,
                        records,
                        samples,
                        stream_samples,
                        jar is not None,
                        workdir,
                    )  # fmt: skip
                )
            finally:
                spark.stop()
    finally:
        cluster.stop()
    jvm = result.setdefault("jvm_rps", None)
    result["jvm_ratio_to_parquet"] = jvm / result["parquet_rps"] if jvm else None
    result["jvm_ratio_to_python"] = jvm / result["python_rps"] if jvm else None
    result["ratio_to_ceiling"] = result["python_rps"] / result["ceiling_rps"]
    result["ratio_to_parquet"] = result["python_rps"] / result["parquet_rps"]
    for key in JVM_STREAM_KEYS:
        result.setdefault(key, None)
    result["load_average"] = [round(load, 2) for load in os.getloadavg()]
    for key, value in list(result.items()):
        if isinstance(value, float):
            result[key] = round(value, 3 if "ratio" in key or key.endswith("_ms") else 0)
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(prog="python -m bench.spark")
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="runs per query per round")
    parser.add_argument("--samples", type=int, default=200, help="micro-batch latency samples")
    parser.add_argument(
        "--stream-samples", type=int, default=400, help="continuous and real-time latency samples"
    )
    parser.add_argument("--quick", action="store_true", help=f"a short run: {QUICK}")
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    workdir = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        result = run(
            args.records, args.partitions, args.repeat, args.samples, args.stream_samples, workdir
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rates = ("jvm", "python", "ceiling", "parquet", "available_now", "available_now_jvm")
    for key in (f"{name}_rps" for name in rates):
        _say(f"{key:>21}: {result[key] or 0:>12,.0f} records/s")
    _say(
        f"jvm / parquet {result['jvm_ratio_to_parquet']}, python / ceiling "
        f"{result['ratio_to_ceiling']:.2f}, python / parquet {result['ratio_to_parquet']:.2f}"
    )
    for name in ("e2e", "microbatch_jvm", "continuous", "realtime"):
        _say(f"{name} p50 {result[f'{name}_p50_ms']} ms, p99 {result[f'{name}_p99_ms']} ms")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
