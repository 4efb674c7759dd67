"""``SpuApp``: one SPU process's parts wired together.

The public server (9005: produce, fetch, stream fetch, fetch offsets), the private server
(9006: follower streams and LEO reports), the dispatcher (``SpuDispatcher``) that runs
the leader and follower controllers, and the link to the SC that feeds the dispatcher
and carries live replica status back. Ports may be 0: the bound ones are what the SPU
reports to the SC.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Self

from spark_stream.net.server import Server
from spu.dispatcher import SpuDispatcher
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
        self.public = Server(
            public_routes(self.dispatcher, self.dispatcher.gates),
            host=settings.host,
            port=settings.public_port,
            name=f"spu-{settings.id}-public",
            max_frame_size=max(settings.max_batch_bytes * 2, 64 << 20),
        )
        self.private = Server(
            private_routes(self.dispatcher),
            host=settings.host,
            port=settings.private_port,
            name=f"spu-{settings.id}-private",
        )
        self.link: ScLink | None = None

    @property
    def public_port(self) -> int:
        """The bound public port (after ``start``)."""
        return self.public.port

    @property
    def private_port(self) -> int:
        """The bound private port (after ``start``)."""
        return self.private.port

    async def start(self) -> Self:
        """Bind both servers, start the dispatcher and connect to the SC."""
        await self.public.start()
        try:
            await self.private.start()
        except BaseException:
            await self.public.stop()
            raise
        self.dispatcher.start()
        self.link = ScLink(self.settings, self.dispatcher, self.public.port, self.private.port)
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

    def _lrs_changed(self, name: str) -> None:
        if self.link is not None:
            self.link.lrs_changed(name)
