"""Produce-to-sink latency of single records for ``bench/spark.py``.

Each sample is one record sent with the Python producer (``send()`` then ``result()``,
``acks="leader"``, no linger) into an idle topic, timed from just before ``send()`` to
the moment the query's sink sees the row:

- **micro-batch** (``microbatch``): ``trigger(processingTime="0 seconds")`` into
  ``foreachBatch``; the batch function stamps ``time.time()`` on the driver for every row
  of its batch. One record at a time: the next goes once the last was seen (or 5 s
  passed), so each arrives into an idle topic.
- **continuous and real-time** (``row_at_a_time``): the sink sees rows one by one on an
  executor, so the latency is computed there. The record's value carries its send time
  and the query stamps each row with the JVM's clock as the sink pulls it
  (``reflect('java.lang.System', 'nanoTime')`` in the projection right before the sink:
  Spark evaluates it per row, in the task that writes the row, after any queue between
  reader and sink). Python's ``time.monotonic_ns`` and Java's ``System.nanoTime`` both
  read ``CLOCK_MONOTONIC`` on Linux, and the local executor is the driver's JVM, so the
  two stamps share a clock; ``shared_clock`` checks that at run time and falls back to
  wall-clock milliseconds (``time.time`` / ``currentTimeMillis``) where it does not hold.
  The rows land in a memory sink (Python's ``foreach`` writer cannot run in a continuous
  query), read once every record is there. Samples are sent at a fixed pace
  (``PACE_S``), not waiting for each other: a row-at-a-time query keeps up.

A warm-up of ``WARMUP`` records, whose latencies are dropped, precedes the samples once
the query's task runs. A real-time query's samples fall within its first batch; the
records sent from then until a second after that batch ends measure the stall at a
batch boundary on their own (Spark commits the batch and starts the next one's tasks,
which reopen their streams).
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["microbatch", "row_at_a_time", "shared_clock", "Clock", "RowLatencies"]

PACE_S = 0.015
"""Interval between the sends of row-at-a-time samples (about 60 records/s)."""
WARMUP = 50
"""Records sent and dropped before the samples, once the query reads."""
REALTIME_BATCH = "15 seconds"
"""A real-time query's batch duration: long enough for the default 400 samples (about
7 s) to fall in the first batch. Rows reach the memory sink at a batch's end."""
ALLOWLIST_CHECK = "spark.sql.streaming.realTimeMode.allowlistCheck"
CONTINUOUS_INTERVAL = "1 second"
"""A continuous query's checkpoint interval: rows reach the memory sink at an epoch's end."""


@dataclass(frozen=True)
class Clock:
    """A clock that Python (the sender) and the JVM (the sink) both read.

    Attributes:
        name: what the figures are measured with, for the log.
        python: reads the clock in Python, in ``unit_ns`` units.
        jvm_method: the static ``java.lang.System`` method reading it on the JVM.
        unit_ns: nanoseconds per unit.
    """

    name: str
    python: Callable[[], int]
    jvm_method: str
    unit_ns: int


MONOTONIC = Clock("CLOCK_MONOTONIC (ns)", time.monotonic_ns, "nanoTime", 1)
WALL_MS = Clock("wall clock (ms)", lambda: time.time_ns() // 1_000_000, "currentTimeMillis", 10**6)


def shared_clock(spark: Any) -> Clock:
    """``MONOTONIC`` if the JVM's ``nanoTime`` falls between two Python reads, else ``WALL_MS``."""
    system = spark.sparkContext._jvm.java.lang.System
    for _ in range(3):
        before = time.monotonic_ns()
        jvm = int(system.nanoTime())
        after = time.monotonic_ns()
        if before <= jvm <= after:
            return MONOTONIC
    return WALL_MS


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout}s")
        time.sleep(0.05)  # bounded poll of the query


def microbatch(
    spark: Any, client: Any, fmt: str, endpoint: str, topic: str, checkpoint: Path, samples: int
) -> list[float]:
    """Milliseconds from ``send()`` to ``foreachBatch`` of ``samples`` single records.

    Args:
        spark: the session.
        client: a connected ``Fluvio`` client, to produce with.
        fmt: the source's name (the JVM connector's ``fluvio`` or the Python one's).
        endpoint: the SC endpoint.
        topic: an idle topic of one partition.
        checkpoint: the query's checkpoint directory (new).
        samples: how many records to time.

    Returns:
        One latency per record seen within 5 s of its send.
    """
    arrivals: dict[int, float] = {}
    lock = threading.Lock()

    def sink(batch: Any, _batch_id: int) -> None:
        now = time.time()
        for row in batch.select("value").collect():
            with lock:
                arrivals[int(bytes(row["value"]))] = now

    df = spark.readStream.format(fmt).option("endpoint", endpoint).option("topic", topic).load()
    query = (
        df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0 seconds").start()
    )  # fmt: skip
    producer = client.topic_producer(topic, acks="leader", linger_ms=0)
    sent: dict[int, float] = {}
    try:
        _wait(lambda: query.lastProgress is not None, 120, "the latency query")
        for i in range(samples):
            sent[i] = time.time()
            producer.send(None, str(i).encode()).result(timeout=30)
            # Spread the samples so each one arrives into an idle topic.
            deadline = time.monotonic() + 5
            while i not in arrivals and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(0.02)
    finally:
        producer.close()
        query.stop()
    return [(arrivals[i] - sent[i]) * 1000 for i in sent if i in arrivals]


@dataclass(frozen=True)
class RowLatencies:
    """Milliseconds from ``send()``, per record.

    Attributes:
        sink: to the sink, per sample.
        ack: to the producer's ack, per sample (the cluster's share: the leader pushes a
            record to the reader as it acks it, so the ack and the push race).
        boundary: to the sink, per record sent around a real-time batch's end (empty for
            a continuous query, whose epochs do not stop the readers).
    """

    sink: list[float]
    ack: list[float]
    boundary: list[float]


def row_at_a_time(
    spark: Any,
    client: Any,
    endpoint: str,
    topic: str,
    checkpoint: Path,
    samples: int,
    mode: str,
    clock: Clock,
) -> RowLatencies:
    """Latencies of ``samples`` records to a continuous or real-time query's sink.

    The query runs alone in the session: its task is running once Spark has an active
    stage. ``WARMUP`` records follow (read from the query's start offset even if the
    task opens its stream after they are sent), then the samples. A real-time query's
    samples fall in its first batch (``REALTIME_BATCH``); records sent from then until
    a second after that batch's rows reach the sink measure the batch boundary.

    Args:
        spark: a session with the JVM connector's jar and no other running query.
        client: a connected ``Fluvio`` client, to produce with.
        endpoint: the SC endpoint.
        topic: an idle topic of one partition.
        checkpoint: the query's checkpoint directory (new).
        samples: how many records to time.
        mode: ``"continuous"`` (``Trigger.Continuous``) or ``"realtime"``
            (``trigger(realTime=...)``).
        clock: the clock both sides read (``shared_clock``).

    Returns:
        The latencies.

    Raises:
        TimeoutError: the query did not start, or lost records.
    """
    table = f"latency_{mode}"
    df = (
        spark.readStream.format("fluvio").option("endpoint", endpoint).option("topic", topic)
        .load()
    )  # fmt: skip
    stamped = df.selectExpr(
        "CAST(value AS STRING) AS value",
        f"CAST(reflect('java.lang.System', '{clock.jvm_method}') AS BIGINT) AS seen",
    )
    writer = (
        stamped.writeStream.format("memory").queryName(table)
        .option("checkpointLocation", str(checkpoint))
    )  # fmt: skip
    if mode == "continuous":
        writer = writer.trigger(continuous=CONTINUOUS_INTERVAL)
    else:
        writer = writer.outputMode("update").trigger(realTime=REALTIME_BATCH)
        # Spark's real-time allowlist names the memory sink of continuous queries only;
        # the micro-batch one it gets here takes rows the same way (docs/spark.md).
        spark.conf.set(ALLOWLIST_CHECK, "false")
    try:
        query = writer.start()
    finally:
        spark.conf.unset(ALLOWLIST_CHECK)
    producer = client.topic_producer(topic, acks="leader", linger_ms=0)
    acked: dict[int, int] = {}  # send stamp -> send to ack, in the clock's units
    tags: dict[str, int] = {}

    def send(tag: str) -> None:
        started = time.monotonic()
        sent = clock.python()
        producer.send(None, f"{tag} {sent}".encode()).result(timeout=30)
        acked[sent] = clock.python() - sent
        tags[tag] = tags.get(tag, 0) + 1
        time.sleep(max(0.0, PACE_S - (time.monotonic() - started)))

    def seen(tag: str) -> list[tuple[int, int]]:
        rows = spark.sql(f"SELECT value, seen FROM {table} WHERE value LIKE '{tag} %'").collect()
        return [(int(row["value"].split()[1]), int(row["seen"])) for row in rows]

    def running() -> bool:
        if query.exception() is not None:
            raise TimeoutError(f"the {mode} query failed: {query.exception()}")
        return len(spark.sparkContext.statusTracker().getActiveStageIds()) > 0

    try:
        _wait(running, 120, f"the {mode} query's task")
        for tag in ["warmup"] * WARMUP + ["sample"] * samples:
            send(tag)
        if mode == "realtime":
            if seen("warmup"):
                _say_stderr("realtime: the first batch ended before the last sample")
            deadline = time.monotonic() + 120
            while not seen("warmup") and time.monotonic() < deadline:
                send("boundary")
            ends = time.monotonic() + 1
            while time.monotonic() < ends:
                send("boundary")
        for tag, count in tags.items():
            _wait(functools.partial(_at_least, seen, tag, count), 120, f"{count} {tag} records")
        ms = clock.unit_ns / 1e6
        stamps = seen("sample")
        return RowLatencies(
            [(at - sent) * ms for sent, at in stamps],
            [acked[sent] * ms for sent, _ in stamps],
            [(at - sent) * ms for sent, at in seen("boundary")],
        )
    finally:
        producer.close()
        query.stop()


def _at_least(seen: Callable[[str], list[tuple[int, int]]], tag: str, count: int) -> bool:
    return len(seen(tag)) >= count


def _say_stderr(message: str) -> None:
    print(f"[bench.spark] {message}", file=sys.stderr, flush=True)
