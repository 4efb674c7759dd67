"""The main demo: a local cluster, a replicated topic, and a Spark streaming query on it.

    python -m jobs.demo [--records 30000] [--data-dir DIR] [--keep]

1. Starts a local cluster (Redis, the SC, three SPUs) under a temporary directory, with
   its own client profile (the user's ``~/.fluvio`` is left alone).
2. Creates the topic ``orders`` (3 partitions, replication factor 3) and produces sample
   orders (key = customer, value = JSON) through the bulk Arrow producer.
3. Runs ``spark.readStream.format("fluvio")`` (found with no ``register()`` call, the
   endpoint taken from the profile) with ``availableNow`` and ``maxRecordsPerTrigger``,
   so the query processes the topic in a few micro-batches and stops by itself; each
   micro-batch updates counts and totals per customer, printed as it goes.
4. Checks the totals against what was produced, stops Spark and the cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from datasource.spark_errors import typed_error
from jobs._main import run_job

if TYPE_CHECKING:
    from spark_stream.client import Fluvio

__all__ = ["main", "sample_orders"]

TOPIC = "orders"
CUSTOMERS = 8


def _say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def sample_orders(n: int, seed: int = 7) -> pa.Table:
    """``n`` orders: key = customer id, value = JSON with an amount in cents."""
    rng = np.random.default_rng(seed)
    customers = rng.integers(0, CUSTOMERS, n)
    amounts = rng.integers(100, 10_000, n)
    keys = pa.array([f"customer-{c}" for c in customers])
    values = pa.array([json.dumps({"order": i, "amount": int(a)}) for i, a in enumerate(amounts)])
    return pa.table({"key": keys, "value": values})


def _wait_for_leaders(client: Fluvio, topic: str, partitions: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            infos = client.topic_partitions(topic)
            if len(infos) == partitions and all(i.leader is not None for i in infos):
                for info in infos:
                    client.fetch_offsets(topic, info.partition)
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} has no leaders after {timeout}s")
        time.sleep(0.1)  # bounded wait for the SC to assign leaders


def run(records: int, data_dir: Path) -> int:
    """The demo itself; returns the process exit code."""
    os.environ["FLUVIO_PROFILE"] = str(data_dir / "profile.json")  # before Spark starts
    os.environ.pop("FLUVIO_ENDPOINT", None)  # it would outrank the demo cluster's profile
    from spark_stream.client import Fluvio
    from spark_stream.local.cluster import LocalCluster

    cluster = LocalCluster(data_dir / "cluster", spus=3, sc_port=0, start_timeout=60.0)
    started = time.monotonic()
    status = cluster.start()
    _say(
        f"cluster up in {time.monotonic() - started:.1f}s: SC at {status.endpoint}, "
        f"SPUs {[s['id'] for s in status.spus]}"
    )
    try:
        with Fluvio.connect() as client:  # the profile written by start()
            client.admin().create_topic(TOPIC, partitions=3, replicationFactor=3)
            _wait_for_leaders(client, TOPIC, 3, 60.0)
            orders = sample_orders(records)
            producer = client.topic_producer(TOPIC, acks="all")
            t = time.monotonic()
            producer.send_batch(orders).result(timeout=120)
            producer.close()
            _say(
                f"produced {records} orders to '{TOPIC}' (3 partitions x 3 replicas) in "
                f"{time.monotonic() - t:.2f}s"
            )
        return _stream(orders)
    finally:
        _say(f"stopping the cluster: {', '.join(cluster.stop())}")


def _stream(orders: pa.Table) -> int:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from datasource.session import local_session

    spark = local_session("fluvio-demo")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        per_batch = max(1, orders.num_rows // 3)
        source = (
            spark.readStream.format("fluvio").option("topic", TOPIC)
            .option("startingOffsets", "earliest")
            .option("maxRecordsPerTrigger", str(per_batch)).load()
        )  # fmt: skip
        totals = (
            source.select(
                F.col("key").cast("string").alias("customer"),
                F.get_json_object(F.col("value").cast("string"), "$.amount")
                .cast("long").alias("amount"),
            )
            .groupBy("customer")
            .agg(F.count("*").alias("orders"), F.sum("amount").alias("cents"))
        )  # fmt: skip
        latest: dict[str, tuple[int, int]] = {}

        def show(batch: DataFrame, batch_id: int) -> None:
            rows = batch.orderBy("customer").collect()
            latest.clear()
            latest.update({r["customer"]: (r["orders"], r["cents"]) for r in rows})
            seen = sum(n for n, _ in latest.values())
            _say(f"micro-batch {batch_id}: {seen} orders so far")
            for r in rows:
                print(
                    f"         {r['customer']:<12} {r['orders']:>6} orders "
                    f"{r['cents'] / 100:>12,.2f}",
                    flush=True,
                )

        t = time.monotonic()
        query = (
            totals.writeStream.outputMode("complete").foreachBatch(show)
            .trigger(availableNow=True).start()
        )  # fmt: skip
        query.awaitTermination(600)
        failure = query.exception()
        if failure is not None:
            _say(f"query failed: {typed_error(failure) or failure}")
            return 1
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        _say(
            f"streaming query done: {len(batches)} micro-batches, "
            f"{sum(p['numInputRows'] for p in batches)} records in {time.monotonic() - t:.1f}s"
        )
        return 0 if _check(orders, latest) else 1
    finally:
        spark.stop()


def _check(orders: pa.Table, latest: dict[str, tuple[int, int]]) -> bool:
    """Compare the query's final totals with the produced data."""
    expected: dict[str, tuple[int, int]] = {}
    for key, value in zip(
        orders.column("key").to_pylist(), orders.column("value").to_pylist(), strict=True
    ):
        n, cents = expected.get(key, (0, 0))
        expected[key] = (n + 1, cents + json.loads(value)["amount"])
    ok = expected == latest
    _say("totals match what was produced" if ok else f"MISMATCH: {expected} != {latest}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point: 0, 1 with ``error: <message>`` on stderr, 2 bad usage."""
    parser = argparse.ArgumentParser(prog="python -m jobs.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=30_000)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the cluster lives (default: a temporary directory)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args(argv)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="fluvio-demo-"))
    try:
        return run_job(lambda: run(args.records, data_dir.resolve()))
    finally:
        if args.keep or args.data_dir is not None:
            _say(f"data kept in {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
