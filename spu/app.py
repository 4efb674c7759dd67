"""``SpuApp``: one SPU process's parts wired together.

The public server (9005: produce, fetch, stream fetch, fetch offsets), the private server
(9006: follower streams and LEO reports), the dispatcher (``SpuDispatcher``) that runs
the leader and follower controllers, and the link to the SC that feeds the dispatcher
and carries live replica status back. Ports may be 0: the bound ones are what the SPU
reports to the SC. With ``metrics_port`` set, Prometheus metrics (``spu.metrics``) are
served on ``host:metrics_port`` and the URL is written to ``{data_dir}/metrics.url``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from types import TracebackType
from typing import Self

from spark_stream.auth import load_key
from spark_stream.auth.guard import Guard
from spark_stream.metrics import MetricsEndpoint
from spark_stream.net.budget import RequestBudget
from spark_stream.net.server import Server
from spark_stream.net.tls import server_context
from spark_stream.supervision import METRICS_URL_FILE
from spu.dispatcher import SpuDispatcher
from spu.metrics import SpuMetrics
from spu.private_api import private_routes
from spu.public_api import public_routes
from spu.sc_link import ScLink
from spu.settings import SpuSettings

__all__ = ["SpuApp"]

logger = logging.getLogger(__name__)


class SpuApp:
    """An SPU: servers, dispatcher and SC link.

    Args:
        settings: the SPU's settings (``load_settings(SpuSettings, ...)``).
    """

    def __init__(self, settings: SpuSettings) -> None:
        self.settings = settings
        self.dispatcher = SpuDispatcher(settings, on_status=self._lrs_changed)
        self.budget = RequestBudget(settings.request_budget_bytes)  # both servers share it
        auth_key = load_key(settings.auth_key_file) if settings.auth_key_file else None
        guard = Guard(auth_key, name=f"spu-{settings.id}-public")
        self.public = Server(
            guard.routes(public_routes(self.dispatcher, self.dispatcher.gates)),
            host=settings.host,
            port=settings.public_port,
            name=f"spu-{settings.id}-public",
            max_frame_size=max(settings.max_batch_bytes * 2, 64 << 20),
            budget=self.budget,
            tls=server_context(settings.tls),
        )
        self.private = Server(
            private_routes(self.dispatcher, self.dispatcher.peer_keys, settings.id),
            host=settings.host,
            port=settings.private_port,
            name=f"spu-{settings.id}-private",
            budget=self.budget,
            tls=server_context(settings.tls),
        )
        self.link: ScLink | None = None
        self.metrics: SpuMetrics | None = None
        self._endpoint: MetricsEndpoint | None = None
        if settings.metrics_port is not None:
            servers = {"public": self.public, "private": self.private}
            self.metrics = SpuMetrics(self.dispatcher, servers)
            self.public.on_request = self.private.on_request = self.metrics.on_request

    @property
    def metrics_url(self) -> str | None:
        """Where Prometheus scrapes this SPU (after ``start``; None when metrics are off)."""
        return self._endpoint.url if self._endpoint is not None else None

    def _url_file(self) -> Path:
        return Path(self.settings.data_dir) / METRICS_URL_FILE

    @property
    def public_port(self) -> int:
        """The bound public port (after ``start``)."""
        return self.public.port

    @property
    def private_port(self) -> int:
        """The bound private port (after ``start``)."""
        return self.private.port

    async def start(self) -> Self:
        """Bind both servers (and the metrics port), start the dispatcher, connect to the SC.

        Raises:
            InvalidConfigError: this SPU has no usable secret (``SpuSettings.load_secret``).
            OSError: a port cannot be bound.
        """
        secret = self.settings.load_secret()
        self._serve_metrics()
        try:
            await self.public.start()
            try:
                await self.private.start()
            except BaseException:
                await self.public.stop()
                raise
        except BaseException:
            await self._stop_metrics()
            raise
        self.dispatcher.start()
        self.link = ScLink(
            self.settings, self.dispatcher, self.public.port, self.private.port, secret
        )
        self.link.start()
        logger.info(
            "spu started id=%d public=%s:%d private=%s:%d sc=%s data_dir=%s",
            self.settings.id,
            self.settings.host,
            self.public.port,
            self.settings.host,
            self.private.port,
            self.settings.sc_endpoint,
            self.settings.data_dir,
        )
        return self

    async def stop(self) -> None:
        """Disconnect from the SC, stop serving, stop controllers and close every log."""
        if self.link is not None:
            await self.link.stop()
        await self.public.stop(grace=1.0)
        await self.private.stop(grace=1.0)
        await self.dispatcher.stop()
        await self._stop_metrics()
        logger.info("spu stopped id=%d", self.settings.id)

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _stop_metrics(self) -> None:
        if self._endpoint is not None:
            await asyncio.to_thread(self._endpoint.stop)  # shutdown() waits for its poll
            self._endpoint = None
            with contextlib.suppress(OSError):
                self._url_file().unlink(missing_ok=True)

    def _serve_metrics(self) -> None:
        """Start the metrics endpoint when asked; record (or clear) its URL file."""
        with contextlib.suppress(OSError):
            self._url_file().unlink(missing_ok=True)  # a previous run's
        if self.metrics is None or self.settings.metrics_port is None:
            return
        self.metrics.install(asyncio.get_running_loop())
        endpoint = MetricsEndpoint(
            self.metrics.registry, self.settings.host, self.settings.metrics_port
        )
        url = endpoint.start()  # OSError names the port
        self._endpoint = endpoint
        path = self._url_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(url + "\n")

    def _lrs_changed(self, name: str) -> None:
        if self.link is not None:
            self.link.lrs_changed(name)
