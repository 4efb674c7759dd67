"""The SC's Prometheus metrics (opt-in: ``metrics_port``).

Events are recorded as they happen, once per batch or call: each controller-loop batch
(``fluvio_sc_reconcile_seconds``, whose ``_count`` counts them, next to
``fluvio_sc_reconcile_batches_total``), each Redis call (``fluvio_sc_kv_op_seconds``,
label ``op``) and each request (``fluvio_sc_request_seconds``, label ``api``). Counts
that mirror state are read at scrape time on the event loop: ``fluvio_sc_topics``,
``fluvio_sc_partitions``, ``fluvio_sc_spus`` (label ``resolution``),
``fluvio_sc_spus_connected``, ``fluvio_sc_under_replicated_partitions`` (as the
leaders' last live status reports), ``fluvio_sc_dispatcher_backlog``,
``fluvio_sc_reconcile_errors_total``, ``fluvio_sc_connections`` (``server``),
``fluvio_sc_request_budget_bytes`` (``kind``: used, capacity) and
``fluvio_sc_request_budget_waiting``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from sc.connection_manager import ConnectionManager
from sc.dispatcher import Dispatcher
from sc.local_store import LocalStore
from spark_stream.metrics import (
    LATENCY_BUCKETS,
    LoopCollector,
    MetricsHook,
    budget_gauges,
    connections_gauge,
    request_latency,
)
from spark_stream.models import Partition
from spark_stream.net.server import RequestHook, Server

__all__ = ["PREFIX", "ScMetrics", "under_replicated"]

PREFIX = "fluvio_sc"


def under_replicated(partitions: Iterable[Partition]) -> int:
    """Partitions whose leader reports fewer in-sync replicas than the spec assigns."""
    count = 0
    for partition in partitions:
        lrs = partition.status.lrs
        if lrs and sum(1 for r in lrs if r.in_sync) < len(partition.spec.replicas):
            count += 1
    return count


class ScMetrics:
    """One SC's registry: hooks for the loop, the KV and the servers, and the collector.

    Args:
        store: the local mirror (object counts).
        dispatcher: the controller loop (batches, errors, backlog).
        cm: the connection manager (connected SPUs).
        servers: the SC's servers by name (``public``, ``private``).
    """

    def __init__(
        self,
        store: LocalStore,
        dispatcher: Dispatcher,
        cm: ConnectionManager,
        servers: dict[str, Server],
    ) -> None:
        self.registry = CollectorRegistry()
        self.on_request: RequestHook = request_latency(self.registry, PREFIX)
        reconcile = Histogram(
            f"{PREFIX}_reconcile_seconds",
            "Time of each controller-loop batch: reduce, then carry out the actions.",
            registry=self.registry,
            buckets=LATENCY_BUCKETS,
        )
        self.on_batch: MetricsHook = reconcile.observe
        self._kv = Histogram(
            f"{PREFIX}_kv_op_seconds",
            "Time of each Redis call (retries included), by operation.",
            ["op"],
            registry=self.registry,
            buckets=LATENCY_BUCKETS,
        )
        self._kv_children: dict[str, MetricsHook] = {}
        self._store = store
        self._dispatcher = dispatcher
        self._cm = cm
        self._servers = servers

    def on_kv_op(self, op: str, seconds: float) -> None:
        """Record one Redis call (``RedisKvStore.on_op``)."""
        observe = self._kv_children.get(op)
        if observe is None:
            observe = self._kv_children[op] = self._kv.labels(op).observe
        observe(seconds)

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Register the scrape-time collector reading state on ``loop``."""
        self.registry.register(LoopCollector(loop, self.snapshot))

    def snapshot(self) -> list[Metric]:
        """Every state metric as of now (runs on the event loop)."""
        store = self._store
        metrics: list[Metric] = []
        for name, objects in (
            ("topics", store.topics()),
            ("partitions", store.partitions()),
            ("spus", store.spus()),
        ):
            family = GaugeMetricFamily(
                f"{PREFIX}_{name}", f"{name.capitalize()} by resolution.", labels=["resolution"]
            )
            counts = Counter(obj.status.resolution.value for obj in objects)
            for resolution, count in sorted(counts.items()):
                family.add_metric([resolution], count)
            metrics.append(family)
        metrics.append(
            GaugeMetricFamily(
                f"{PREFIX}_spus_connected",
                "SPUs connected to the private server now.",
                value=len(self._cm.connected_ids()),
            )
        )
        metrics.append(
            GaugeMetricFamily(
                f"{PREFIX}_under_replicated_partitions",
                "Partitions whose leader reports fewer in-sync replicas than assigned.",
                value=under_replicated(store.partitions()),
            )
        )
        metrics.append(
            GaugeMetricFamily(
                f"{PREFIX}_dispatcher_backlog",
                "Inputs queued for the controller loop.",
                value=self._dispatcher.backlog,
            )
        )
        metrics.append(
            CounterMetricFamily(
                f"{PREFIX}_reconcile_batches",
                "Controller-loop batches carried out.",
                value=self._dispatcher.batches,
            )
        )
        metrics.append(
            CounterMetricFamily(
                f"{PREFIX}_reconcile_errors",
                "Controller or batch failures (logged at ERROR).",
                value=self._dispatcher.errors,
            )
        )
        metrics.append(connections_gauge(PREFIX, self._servers.items()))
        metrics += budget_gauges(PREFIX, self._servers.items())
        return metrics
