"""Prometheus metrics shared by the SC and the SPU: the HTTP endpoint, request latency,
open connections.

Theory of operation. Each process owns one ``CollectorRegistry`` (not the library's
global one, so several SPUs in one test process never clash). What mirrors state
(offsets, counts, connections) is read when Prometheus scrapes, by a custom collector
of the process (``sc.metrics``, ``spu.metrics``); only events are recorded as they
happen, and only per request or per batch, never per record: a request's latency goes
to a histogram child looked up once per api key. The endpoint is prometheus-client's
own HTTP server on a daemon thread, bound to the process's host (loopback by default)
on an opt-in port (``metrics_port``; 0 picks a free one, read back from ``port``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from spark_stream.net.server import RequestHook, Server
from spark_stream.protocol import api_name

__all__ = [
    "LATENCY_BUCKETS",
    "MetricsEndpoint",
    "request_latency",
    "connections_gauge",
    "LoopCollector",
    "MetricsHook",
]

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
"""Seconds: from half a millisecond (a local fetch) to ten (an ``acks=all`` timeout)."""

MetricsHook = Callable[[float], None]
"""Records one duration in seconds (a histogram's ``observe``)."""


def request_latency(registry: CollectorRegistry, prefix: str) -> RequestHook:
    """A ``Server.on_request`` hook feeding ``{prefix}_request_seconds{api=...}``.

    The histogram child of each api key is looked up once and kept, so a request costs
    one dict lookup and one ``observe``.
    """
    histogram = Histogram(
        f"{prefix}_request_seconds",
        "Time from a request's arrival to its reply, by api.",
        ["api"],
        registry=registry,
        buckets=LATENCY_BUCKETS,
    )
    children: dict[int, MetricsHook] = {}

    def observe(api_key: int, seconds: float) -> None:
        hook = children.get(api_key)
        if hook is None:
            hook = children[api_key] = histogram.labels(api_name(api_key)).observe
        hook(seconds)

    return observe


SCRAPE_TIMEOUT_S = 5.0
"""How long a scrape waits for the event loop to take its snapshot."""


class LoopCollector(Collector):
    """Metrics read from state the event loop owns, taken *on* that loop at scrape time.

    The HTTP server answers on its own thread while the loop mutates offsets, maps and
    lists; rather than read them across threads, ``collect`` asks the loop to run
    ``snapshot`` and waits for it (one callback per scrape, nothing on the hot path).
    A loop too busy to answer within ``SCRAPE_TIMEOUT_S`` yields nothing this scrape.

    Args:
        loop: the process's event loop.
        snapshot: builds the metric families (runs on ``loop``).
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, snapshot: Callable[[], list[Metric]]
    ) -> None:
        self._loop = loop
        self._snapshot = snapshot
        self._loop_thread = threading.get_ident()

    def collect(self) -> Iterator[Metric]:
        if threading.get_ident() == self._loop_thread:  # already on the loop
            yield from self._snapshot()
            return
        done: concurrent.futures.Future[list[Metric]] = concurrent.futures.Future()

        def take() -> None:
            try:
                done.set_result(self._snapshot())
            except Exception as exc:  # reported on the scraping thread below
                done.set_exception(exc)

        try:
            self._loop.call_soon_threadsafe(take)
            yield from done.result(timeout=SCRAPE_TIMEOUT_S)
        except RuntimeError:  # the loop is closed: the process is stopping
            return
        except concurrent.futures.TimeoutError:
            log.warning("metrics scrape: the event loop did not answer in %ss", SCRAPE_TIMEOUT_S)


def connections_gauge(prefix: str, servers: Iterable[tuple[str, Server]]) -> GaugeMetricFamily:
    """``{prefix}_connections{server=...}``: connections open now on each server."""
    gauge = GaugeMetricFamily(
        f"{prefix}_connections", "Open client/peer connections.", labels=["server"]
    )
    for name, server in servers:
        gauge.add_metric([name], len(server.connections))
    return gauge


def budget_gauges(prefix: str, servers: Iterable[tuple[str, Server]]) -> list[Metric]:
    """``{prefix}_request_budget_bytes{kind=used|capacity}`` and
    ``{prefix}_request_budget_waiting`` (connections not reading for want of bytes), of
    the request budget the servers share (each budget once)."""
    used = GaugeMetricFamily(
        f"{prefix}_request_budget_bytes",
        "Request bytes held in memory, and the budget's capacity.",
        labels=["kind"],
    )
    waiting = GaugeMetricFamily(
        f"{prefix}_request_budget_waiting",
        "Frames whose connection stopped reading until the budget has room.",
    )
    budgets = {id(server.budget): server.budget for _, server in servers}.values()
    used.add_metric(["used"], sum(b.used for b in budgets))
    used.add_metric(["capacity"], sum(b.capacity for b in budgets))
    waiting.add_metric([], sum(b.waiting for b in budgets))
    return [used, waiting]


class MetricsEndpoint:
    """Serves one registry at ``http://{host}:{port}/metrics``.

    Args:
        registry: what to serve.
        host: the address to bind (the process's host, loopback by default).
        port: the port; 0 picks a free one.
    """

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self._requested = port
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (after ``start``)."""
        return 0 if self._server is None else int(self._server.server_port)

    @property
    def url(self) -> str:
        """Where Prometheus scrapes: ``http://host:port/metrics``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> str:
        """Bind and serve on a daemon thread; return the URL.

        Raises:
            OSError: the port cannot be bound; the message names it (``metrics port
                host:port: Address already in use``).
        """
        try:
            self._server, self._thread = start_http_server(
                self._requested, addr=self.host, registry=self.registry
            )
        except OSError as exc:
            raise OSError(
                exc.errno, f"metrics port {self.host}:{self._requested}: {exc.strerror}"
            ) from exc
        log.info("metrics served at %s", self.url)
        return self.url

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
