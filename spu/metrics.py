"""The SPU's Prometheus metrics (opt-in: ``metrics_port``).

Everything that mirrors state is read at scrape time, on the event loop
(``spark_stream.metrics.LoopCollector``): every open replica's offsets and size, the
leaders' in-sync counts and their view of each follower's lag, the produce and fetch
totals (``spu.traffic``, bumped once per request) and the open connections. Only the
request latency histogram is fed as requests finish (``Server.on_request``).

Names (all prefixed ``fluvio_spu_``): ``partition_leo``, ``partition_hw``,
``partition_log_start``, ``partition_size_bytes`` (labels ``topic``, ``partition``,
``role``: leader or follower); ``partition_in_sync_replicas``, ``partition_replicas``
(leaders); ``produced_bytes_total``, ``produced_records_total``,
``fetched_bytes_total``, ``fetched_records_total``; ``replication_lag_records``
(labels ``topic``, ``partition``, ``follower``; -1: no report yet);
``under_replicated_partitions``; ``connections`` (``server``);
``request_budget_bytes`` (``kind``: used, capacity), ``request_budget_waiting``;
``request_seconds`` (``api``).
"""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from spark_stream.metrics import (
    LoopCollector,
    budget_gauges,
    connections_gauge,
    request_latency,
)
from spark_stream.models import parse_partition_name
from spark_stream.net.server import RequestHook, Server
from spu.dispatcher import SpuDispatcher

__all__ = ["PREFIX", "SpuMetrics"]

PREFIX = "fluvio_spu"
_PARTITION = ["topic", "partition"]


class SpuMetrics:
    """One SPU's registry: the scrape-time collector and the request latency hook.

    Args:
        dispatcher: the SPU's dispatcher (replica logs, leaders, traffic totals).
        servers: the SPU's servers by name (``public``, ``private``), for connections.
    """

    def __init__(self, dispatcher: SpuDispatcher, servers: dict[str, Server]) -> None:
        self.registry = CollectorRegistry()
        self.on_request: RequestHook = request_latency(self.registry, PREFIX)
        self._dispatcher = dispatcher
        self._servers = servers

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Register the scrape-time collector reading state on ``loop``."""
        self.registry.register(LoopCollector(loop, self.snapshot))

    def snapshot(self) -> list[Metric]:
        """Every state metric as of now (runs on the event loop)."""
        d = self._dispatcher
        gauges: dict[str, GaugeMetricFamily] = {}

        def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
            return gauges.setdefault(
                name, GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)
            )

        role_labels = [*_PARTITION, "role"]
        leo = gauge("partition_leo", "Log end offset of each replica here.", role_labels)
        hw = gauge("partition_hw", "High watermark of each replica here.", role_labels)
        start = gauge("partition_log_start", "First offset still stored.", role_labels)
        size = gauge("partition_size_bytes", "Bytes of the replica's segments.", role_labels)
        for name, log in sorted(d.logs().items()):
            if log.closed:
                continue
            labels = [*_labels(name), "leader" if d.leader(name) is not None else "follower"]
            leo.add_metric(labels, log.leo)
            hw.add_metric(labels, log.hw)
            start.add_metric(labels, log.log_start_offset)
            size.add_metric(labels, log.size_bytes)

        isr = gauge("partition_in_sync_replicas", "In-sync replicas (leader's view).", _PARTITION)
        replicas = gauge("partition_replicas", "Replicas assigned (leaders).", _PARTITION)
        lag = gauge(
            "replication_lag_records",
            "Records a follower is behind the leader's LEO (-1: not heard from).",
            [*_PARTITION, "follower"],
        )
        under = 0
        for leader in d.leaders():
            if leader.stopped:
                continue
            labels = _labels(leader.name)
            isr.add_metric(labels, len(leader.in_sync))
            replicas.add_metric(labels, leader.replica_count)
            under += len(leader.in_sync) < leader.replica_count
            for follower, behind in sorted(leader.follower_lag().items()):
                lag.add_metric([*labels, str(follower)], behind)
        gauge(
            "under_replicated_partitions",
            "Partitions led here with fewer in-sync replicas than replicas.",
            [],
        ).add_metric([], under)

        metrics: list[Metric] = [*gauges.values()]
        metrics += _traffic(d)
        metrics.append(connections_gauge(PREFIX, self._servers.items()))
        metrics += budget_gauges(PREFIX, self._servers.items())
        return metrics


def _labels(name: str) -> list[str]:
    topic, partition = parse_partition_name(name)
    return [topic, str(partition)]


_TRAFFIC = (
    ("produced_bytes", "Bytes appended by producers."),
    ("produced_records", "Records appended by producers."),
    ("fetched_bytes", "Bytes sent to consumers."),
    ("fetched_records", "Records sent to consumers (whole frames)."),
)


def _traffic(d: SpuDispatcher) -> list[Metric]:
    """The produce and fetch counters (``PartitionTraffic`` field names)."""
    totals = [(_labels(name), t) for name, t in sorted(d.traffic.items())]
    families: list[Metric] = []
    for field, doc in _TRAFFIC:
        family = CounterMetricFamily(f"{PREFIX}_{field}", doc, labels=_PARTITION)
        for labels, traffic in totals:
            family.add_metric(labels, getattr(traffic, field))
        families.append(family)
    return families
