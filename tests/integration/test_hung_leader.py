"""A hung leader (SIGSTOP): in-flight produce requests and an open consumer stream fail
over as soon as the metadata names a new leader, instead of waiting out their request
timeout (or, for the stream, until the SPU is continued).

The SC marks the stopped SPU offline after its heartbeat timeout (6 s) and elects a new
leader. Before the fix the producer's requests to the stopped SPU waited out their 30 s
request timeout; with a delivery timeout of 25 s (below the request timeout) every
record sent after the stop then failed. Now every record is acknowledged, and the log
holds each exactly once (idempotence), in order. The 25 s is a bound the old behaviour
cannot meet, not a timing assertion: the failover takes about 6 s.

A consumer-group member's fetch stream is a partition consumer's stream with the grant
(``AsyncGroupConsumer._run_pump``), so it fails over the same way; its test would time
out if the stream waited for the stopped SPU.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_stream.client import Fluvio, Offset
from spark_stream.client.producer.futures import DeliveryFuture
from spark_stream.errors import FluvioError
from spark_stream.local.cluster import LocalCluster
from tests.integration.helpers import (
    durable_producer,
    leader_pid,
    make_topic,
    running_cluster,
    unique,
)
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SENT = 1500
STOP_AT = 500


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(Path(tmp_path_factory.mktemp("hung-leader")), spus=3) as running:
        yield running


def test_in_flight_produce_fails_over_from_a_hung_leader(cluster: LocalCluster) -> None:
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=1, replication=3, min_in_sync_replicas=2)
        leader, pid = leader_pid(fluvio, cluster, topic)
        producer = durable_producer(
            fluvio, topic, request_timeout_ms=30_000, delivery_timeout_ms=25_000
        )
        futures: list[tuple[bytes, DeliveryFuture]] = []
        stopped = False
        consumed: list[tuple[int, bytes]] = []
        stream = fluvio.partition_consumer(topic, 0).stream(Offset.beginning())

        def consume() -> None:
            with contextlib.suppress(FluvioError):  # closed at the end
                for record in stream:
                    consumed.append((record.offset, record.value))
                    if len(consumed) >= SENT:
                        return

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        try:
            for i in range(SENT):
                value = f"r{i:06d}".encode()
                futures.append((value, producer.send(None, value)))
                if i % 50 == 0:
                    time.sleep(0.005)  # a steady producer, not a flood
                if i == STOP_AT:
                    futures[-1][1].result(30)  # the leader took writes before it hung
                    os.kill(pid, signal.SIGSTOP)
                    stopped = True
            with contextlib.suppress(FluvioError):  # counted below
                producer.flush(timeout=120)
            failed = [(v, f.exception(0)) for v, f in futures if f.exception(30) is not None]
            wait_until(
                lambda: fluvio.topic_partitions(topic)[0].leader not in (None, leader),
                60,
                "a new leader",
            )
            # the consumer's stream was open on the hung leader: it moves too, before
            # the hung SPU is continued
            wait_until(lambda: len(consumed) >= SENT, 60, "the consumer to read every record")
        finally:
            if stopped:
                os.kill(pid, signal.SIGCONT)
        assert not failed, f"{len(failed)} of {SENT} not acknowledged, first: {failed[0]}"
        acked = [v for v, _ in futures]
        log = [v for b in fluvio.fetch_batches(topic, 0, 0) for v in b.column("value").to_pylist()]
        assert log == acked  # every acknowledged record once, in order
        reader.join(30)
        stream.close()
        assert consumed == list(enumerate(acked))
        producer.close()


def test_a_group_members_fetch_fails_over_from_a_hung_leader(cluster: LocalCluster) -> None:
    """A consumer-group member reading a RF 3 partition: its gated fetch stream, open on
    the leader when it is SIGSTOPped, moves to the new leader as soon as the metadata
    names it. The member then reads what was produced before and after the stop, each
    record once and in order, while the old leader is still stopped: a stream that waits
    for the hung SPU never gets there (the bound is 90 s, the failover about 6 s)."""
    before, after = 300, 300
    with Fluvio.connect(cluster.endpoint, timeout=20) as fluvio:
        topic = make_topic(fluvio, partitions=1, replication=3, min_in_sync_replicas=2)
        leader, pid = leader_pid(fluvio, cluster, topic)
        producer = fluvio.topic_producer(
            topic, acks="all", idempotence=True, linger_ms=2, delivery_timeout_ms=60_000
        )
        sent = [f"b{i:06d}".encode() for i in range(before)]
        for value in sent:
            producer.send(None, value)
        producer.flush(timeout=60)
        member = fluvio.group_consumer(
            topic, group=unique("hung"), auto_offset_reset="earliest", enable_auto_commit=False
        )
        consumed: list[tuple[int, bytes]] = []
        stream = member.stream()

        def consume() -> None:
            with contextlib.suppress(FluvioError):  # closed at the end
                for record in stream:
                    consumed.append((record.offset, record.value))
                    if len(consumed) >= before + after:
                        return

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        stopped = False
        try:
            wait_until(lambda: len(consumed) >= before, 60, "the member to read the first part")
            os.kill(pid, signal.SIGSTOP)  # the member's fetch stream is open on it
            stopped = True
            wait_until(
                lambda: fluvio.topic_partitions(topic)[0].leader not in (None, leader),
                60,
                "a new leader",
            )
            later = [f"a{i:06d}".encode() for i in range(after)]
            futures = [producer.send(None, value) for value in later]
            producer.flush(timeout=60)
            assert all(f.exception(30) is None for f in futures)
            sent += later
            wait_until(
                lambda: len(consumed) >= before + after,
                90,
                "the member to read what was produced after the stop, from the new leader",
            )
        finally:
            if stopped:
                os.kill(pid, signal.SIGCONT)
        reader.join(30)
        stream.close()
        member.close()
        producer.close()
        assert consumed == list(enumerate(sent))  # each record once, in order
