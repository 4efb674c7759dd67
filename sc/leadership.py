"""One SC process: a standby until it holds the lease, then the active SC, fenced.

Theory of operation (the rules are ``sc.lease``'s; this is the I/O around them).
``ScNode.start`` binds both ports with *standby servers* that answer every request with
``NotActiveError`` naming the active SC (``spark_stream.net.sc_endpoints``), so clients
and SPUs given every SC's address learn where to go. Then the node claims the lease
(its holder string is its two bound addresses):

- granted: the standby servers close and an ``ScApp`` starts on the same ports, with a
  KV store of its own fenced with the lease's token: every write it makes is refused
  once another SC was granted the lease after it;
- refused: the node stays standby and claims again every ``lease_poll_s``.

While active, the node renews every third of ``lease_ttl_s``. A renewal that finds the
lease taken, or a write refused by the fence (``KvStore.on_deposed``), makes it step
down at once: the app stops (controllers first, so nothing more is written; managed
SPUs keep running), and the standby servers bind the ports again. Unless the store's
last token is below the node's own: then the store lost its data, and ``lost`` is set
for the process to exit and the next start to rebuild (as ``ScApp.lost``). A Redis that does not
answer is not a reason to step down: the fence keeps writes safe, and the renewal is
retried. ``stop`` releases the lease, so a standby takes over without waiting out the TTL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from sc.app import ScApp
from sc.kv import KvStore, RedisKvStore
from sc.lease import LeaseConfig, StepKind, next_step
from sc.settings import ScSettings
from spark_stream.errors import FluvioError
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.sc_endpoints import ActiveSc, not_active
from spark_stream.net.server import ConnContext, Handler, Reply, Server
from spark_stream.protocol import Request
from spark_stream.protocol.api import ApiKey

__all__ = ["ScNode", "StandbyServers"]

log = logging.getLogger(__name__)

#: Api keys the standby servers answer (every SC api; API_VERSIONS answers itself).
_SC_APIS = tuple(k for k in ApiKey if k.value >= 1000 and not 3000 <= k.value < 5000)


class StandbyServers:
    """Both SC ports while standing by: every request gets ``NotActiveError``.

    Args:
        host: the bind address.
        public_port: the public port (0: any free one; read ``public_port`` after).
        private_port: the private port (0: any free one).
        active: the active SC as last seen (None: unknown), read per request.
    """

    def __init__(
        self,
        host: str,
        public_port: int,
        private_port: int,
        active: Callable[[], ActiveSc | None],
    ) -> None:
        self._active = active
        handlers: dict[int, Handler] = {int(key): self._refuse for key in _SC_APIS}
        self.public = Server(handlers, host=host, port=public_port, name="sc-public-standby")
        self.private = Server(handlers, host=host, port=private_port, name="sc-private-standby")

    async def _refuse(self, request: Request, ctx: ConnContext) -> Reply:
        raise not_active(self._active())

    async def start(self) -> None:
        """Bind both ports (the public one first, as the active SC does)."""
        await self.public.start()
        try:
            await self.private.start()
        except BaseException:
            await self.public.stop()
            raise

    async def stop(self) -> None:
        """Close both ports and every connection (peers then reconnect elsewhere)."""
        await self.public.stop(grace=1.0)
        await self.private.stop(grace=1.0)


class ScNode:
    """An SC that takes part in the lease: standby, or running the active ``ScApp``.

    Args:
        settings: the SC's settings (``lease_ttl_s``, ``lease_poll_s`` pace the lease).
        make_app: builds the active SC on a fenced store; default ``ScApp(settings, kv=...)``.
        make_kv: a fresh KV store (one for the lease, one per activation); default a
            ``RedisKvStore`` on ``settings.redis_url``.
    """

    def __init__(
        self,
        settings: ScSettings,
        *,
        make_app: Callable[[ScSettings, KvStore], ScApp] | None = None,
        make_kv: Callable[[], KvStore] | None = None,
    ) -> None:
        self.settings = settings
        self.config = LeaseConfig(ttl_s=settings.lease_ttl_s, poll_s=settings.lease_poll_s)
        self._make_app = make_app or (lambda s, kv: ScApp(s, kv=kv))
        self._make_kv = make_kv or self._redis
        self._lease_kv = self._make_kv()
        self.app: ScApp | None = None
        self.token: int | None = None
        self.active_sc: ActiveSc | None = None
        self.me: ActiveSc | None = None
        self.public_port = settings.public_port
        self.private_port = settings.private_port
        self.activations = 0
        self._standby: StandbyServers | None = None
        self._deposed = asyncio.Event()
        self.lost = asyncio.Event()
        """Set when an app of this node found the store lost data (``ScApp.lost``)."""
        self._task: asyncio.Task[None] | None = None

    def _redis(self) -> KvStore:
        # The lease's own calls give up within a TTL, so the loop keeps its pace.
        return RedisKvStore(
            self.settings.redis_url,
            prefix=self.settings.key_prefix,
            reconnect_timeout=self.settings.lease_ttl_s,
            password=self.settings.redis_password(),
        )

    @property
    def is_active(self) -> bool:
        """This node runs the active SC."""
        return self.app is not None

    @property
    def metrics_url(self) -> str | None:
        """The active app's metrics URL (None while standing by or with metrics off)."""
        return self.app.metrics_url if self.app is not None else None

    async def start(self) -> None:
        """Bind the ports, claim the lease once, and start the lease loop.

        Returns as the active SC (the app started) or as a standby.

        Raises:
            KvUnavailableError: Redis did not answer the first claim.
            OSError: a port cannot be bound.
        """
        await self._stand_by()
        host = self.settings.host
        self.me = ActiveSc(
            str(Endpoint(host, self.public_port)), str(Endpoint(host, self.private_port))
        )
        try:
            await self._claim()
        except BaseException:
            await self.stop()
            raise
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="sc-lease")

    async def _stand_by(self) -> None:
        servers = StandbyServers(
            self.settings.host, self.public_port, self.private_port, lambda: self.active_sc
        )
        await servers.start()
        self.public_port, self.private_port = servers.public.port, servers.private.port
        self._standby = servers

    async def _claim(self) -> None:
        assert self.me is not None
        answer = await self._lease_kv.claim_lease(self.me.holder(), self.config.ttl_s)
        if answer.granted:
            await self._activate(answer.token)
        else:
            self.active_sc = ActiveSc.parse(answer.holder)

    async def _activate(self, token: int) -> None:
        began = time.monotonic()
        if self._standby is not None:
            await self._standby.stop()
            self._standby = None
        settings = self.settings.model_copy(
            update={"public_port": self.public_port, "private_port": self.private_port}
        )
        kv = self._make_kv()
        kv.fence(token)
        kv.on_deposed = self._refused
        self._deposed.clear()
        app = self._make_app(settings, kv)
        app.lost = self.lost  # the process exits on it (``sc.__main__``)
        try:
            await app.start()  # stops itself when it fails
        except (FluvioError, OSError) as exc:
            log.error("sc failed to become active (token %d): %s", token, exc)
            await self._stand_by()
            return
        self.app, self.token, self.active_sc = app, token, self.me
        self.activations += 1
        log.info(
            "sc active: took the lease token=%d in %.3fs (since the claim was granted)",
            token,
            time.monotonic() - began,
        )

    def _refused(self, last: int) -> None:
        """A write was refused by the fence; ``last`` is the store's last token."""
        if self.token is not None and last < self.token:
            self._store_lost(last)
        else:
            self._deposed.set()

    def _store_lost(self, last: int) -> None:
        """Tokens only grow: a store whose last is below ours lost its data.

        Not a takeover: the process exits on ``lost`` (``sc.__main__``), as when the
        app itself finds the store lost data, and the next start rebuilds.
        """
        if not self.lost.is_set():
            log.error(
                "the store's last lease token %d is below ours %s: it lost data", last, self.token
            )
        self.lost.set()

    async def _step_down(self, reason: str) -> None:
        log.warning("sc stepping down (token %s): %s", self.token, reason)
        holder = None  # not this SC any more: ask who is, for the standby's answers
        with contextlib.suppress(FluvioError):
            holder = ActiveSc.parse((await self._lease_kv.lease_holder()).holder)
        app, self.app, self.token, self.active_sc = self.app, None, None, holder
        if app is not None:
            await app.stop(keep_spus=True)
        self._deposed.clear()
        await self._stand_by()
        log.info("sc standing by public=%d private=%d", self.public_port, self.private_port)

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        last: float | None = loop.time()
        while True:
            step = next_step(self.is_active, last, loop.time(), self.config)
            if step.kind is StepKind.WAIT:
                if not self.is_active:
                    await asyncio.sleep(step.delay)  # the standby's poll period
                    continue
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(step.delay):
                        await self._deposed.wait()  # a fenced write cuts the wait short
                if self._deposed.is_set():
                    await self._step_down("a write was refused: another SC holds the lease")
                    last = loop.time()
                continue
            last = loop.time()
            try:
                if step.kind is StepKind.CLAIM:
                    await self._claim()
                else:
                    await self._renew()
            except FluvioError as exc:  # Redis away: the fence keeps writes safe
                log.warning("lease %s failed, retrying: %s", step.kind.value, exc)
            except Exception:  # e.g. a port taken meanwhile: keep the loop alive
                log.exception("lease %s failed, retrying", step.kind.value)

    async def _renew(self) -> None:
        assert self.me is not None and self.token is not None
        answer = await self._lease_kv.renew_lease(self.token, self.me.holder(), self.config.ttl_s)
        if not answer.granted and answer.token < self.token:
            self._store_lost(answer.token)
        elif not answer.granted:
            await self._step_down(f"lease lost to token {answer.token} ({answer.holder!r})")

    async def stop(self, *, keep_spus: bool = False) -> None:
        """Stop the loop and the app (releasing the lease) or the standby servers.

        Args:
            keep_spus: leave the managed SPUs running (see ``ScApp.stop``).
        """
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        app, token, self.app, self.token = self.app, self.token, None, None
        if app is not None:
            await app.stop(keep_spus=keep_spus)
        if self._standby is not None:
            await self._standby.stop()
            self._standby = None
        if token is not None:
            with contextlib.suppress(FluvioError):
                await self._lease_kv.release_lease(token)
        await self._lease_kv.close()
