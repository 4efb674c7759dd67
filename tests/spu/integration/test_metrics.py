"""Prometheus metrics of real processes: an SC and two SPUs with ``metrics_port`` 0.

Produce and fetch through the leader, then scrape every endpoint over HTTP and check
the values against what was done: the leader's LEO and HW equal the records produced,
the produce and fetch counters moved by exactly that, latency histograms have samples,
the follower caught up with no lag, and the SC timed its Redis calls and loop batches.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from spark_stream.protocol import Acks
from spark_stream.supervision import METRICS_URL_FILE
from tests.harness.scrape import Samples, scrape
from tests.spu.conftest import ClusterFactory
from tests.spu.helpers import fetch_values, produce, run, until

pytestmark = pytest.mark.integration

TOPIC = "metered"


async def _scrape(url: str) -> Samples:
    return await asyncio.to_thread(scrape, url)


def _url(workdir: Path) -> str:
    return (workdir / METRICS_URL_FILE).read_text().strip()


def test_sc_and_spu_endpoints_report_what_was_done(spu_cluster: ClusterFactory) -> None:
    async def body() -> None:
        cluster = spu_cluster([1, 2], sc_metrics=True, spu_settings={"metrics_port": 0})
        async with cluster:
            await cluster.create_topic(TOPIC, partitions=1, replicationFactor=2)
            leader = await cluster.leader_of(f"{TOPIC}-0")
            follower = 2 if leader == 1 else 1
            conn = await cluster.connect(leader)
            for batch in range(3):
                items = [f"r{batch}-{i}" for i in range(5)]
                await produce(conn, TOPIC, 0, items, acks=Acks.ALL)
            assert len(await fetch_values(conn, TOPIC, 0)) == 15

            spu_url = _url(cluster.spus[leader].workdir)
            assert spu_url.startswith("http://127.0.0.1:")
            assert f"metrics={spu_url}" in cluster.spus[leader].log()
            part = {"topic": TOPIC, "partition": "0"}
            spu = await _scrape(spu_url)
            assert spu.get("fluvio_spu_partition_leo", role="leader", **part) == 15
            assert spu.get("fluvio_spu_partition_hw", role="leader", **part) == 15
            assert spu.get("fluvio_spu_partition_log_start", **part) == 0
            assert (spu.get("fluvio_spu_partition_size_bytes", **part) or 0) > 0
            assert spu.get("fluvio_spu_produced_records_total", **part) == 15
            assert (spu.get("fluvio_spu_produced_bytes_total", **part) or 0) > 0
            assert spu.get("fluvio_spu_fetched_records_total", **part) == 15
            assert spu.get("fluvio_spu_partition_replicas", **part) == 2
            assert (spu.get("fluvio_spu_request_seconds_count", api="PRODUCE") or 0) >= 3
            assert (spu.get("fluvio_spu_request_seconds_count", api="FETCH") or 0) >= 1
            assert (spu.get("fluvio_spu_connections", server="public") or 0) >= 1
            assert spu.get("fluvio_spu_request_budget_bytes", kind="capacity") == 256 << 20
            assert spu.get("fluvio_spu_request_budget_waiting") == 0

            async def caught_up() -> Samples | None:
                now = await _scrape(spu_url)
                lag = now.get("fluvio_spu_replication_lag_records", follower=str(follower))
                isr = now.get("fluvio_spu_partition_in_sync_replicas", **part)
                return now if lag == 0 and isr == 2 else None

            settled = await until(caught_up, what="the follower in sync with no lag")
            assert settled.get("fluvio_spu_under_replicated_partitions") == 0

            follower_url = _url(cluster.spus[follower].workdir)
            replica = await _scrape(follower_url)
            assert replica.get("fluvio_spu_partition_leo", role="follower", **part) == 15
            assert replica.get("fluvio_spu_produced_records_total", **part) is None

            assert cluster.sc.metrics_url is not None
            sc = await _scrape(cluster.sc.metrics_url)
            assert sum(sc.all("fluvio_sc_kv_op_seconds_count")) > 0
            assert (sc.get("fluvio_sc_kv_op_seconds_count", op="create") or 0) >= 1
            assert sc.get("fluvio_sc_topics", resolution="Provisioned") == 1
            assert sc.get("fluvio_sc_partitions", resolution="Online") == 1
            assert sc.get("fluvio_sc_spus", resolution="Online") == 2
            assert sc.get("fluvio_sc_spus_connected") == 2
            assert (sc.get("fluvio_sc_reconcile_batches_total") or 0) > 0
            assert (sc.get("fluvio_sc_reconcile_seconds_count") or 0) > 0
            assert sum(sc.all("fluvio_sc_request_seconds_count")) > 0
            assert (sc.get("fluvio_sc_connections", server="private") or 0) == 2
            assert sc.get("fluvio_sc_request_budget_bytes", kind="capacity") == 256 << 20
            # Open streams (the SPUs' links, the metadata watch) keep their requests held.
            assert 0 < (sc.get("fluvio_sc_request_budget_bytes", kind="used") or 0) < 1 << 20

    run(body)


def test_spu_without_metrics_serves_none(spu_cluster: ClusterFactory) -> None:
    async def body() -> None:
        async with spu_cluster([1]) as cluster:
            assert not (cluster.spus[1].workdir / METRICS_URL_FILE).exists()
            assert "metrics=" not in cluster.spus[1].log()
            assert cluster.sc.metrics_url is None

    run(body)
