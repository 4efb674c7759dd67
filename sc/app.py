"""The Streaming Controller, wired: KV store, mirror, controllers, CM, servers, provisioner.

Start-up order, and why:

1. The private server binds first, so managed SPUs can be told the SC's real address
   (port 0 picks one). An SPU that connects this early waits (bounded) in its
   authorisation until the state is loaded.
2. ``Dispatcher.load`` lists the whole KV into the mirror and reduces it: the
   controllers re-announce every SPU and partition to the connection manager; objects
   whose state is already right produce no KV writes, so a restart changes nothing.
3. The watch and the controller loop start, then the public server.
4. Managed SPUs are re-provisioned (the provisioner adopts those still running).
5. After ``heartbeat_timeout_s`` (SPUs had time to reconnect) and then periodically, a
   ``Reconcile`` with the set of connected SPUs repairs drift: SPUs that did not come
   back go ``Offline`` and their partitions get new leaders.
6. With ``leader_rebalance_enabled``, every ``leader_rebalance_interval_s`` an
   ``ElectPreferred`` sweep hands leadership back to preferred replicas that are online
   and in sync again (``sc.controllers.partition.preferred``).

With ``metrics_port`` set, Prometheus metrics (``sc.metrics``) are served on
``host:metrics_port`` from the start of step 1.

``stop()`` stops the controller loop *before* closing SPU connections: the SC going
away is not the SPUs failing, so no status is written and no leader moves.

Losing the store. The store's identity (``KvStore.store_id``) is read first and sent to
every SPU, which keeps it with its replicas' metadata. A connecting SPU's report of
replicas the store forgot is rebuilt into the store (``sc.rebuild``) before the SPU is
accepted. A store found to have lost data while the SC runs halts the controller loop
and sets ``lost``: ``python -m sc`` then exits (status 1) without stopping the managed
SPUs, and the next SC rebuilds from what they report.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping, Sequence

from sc.actions import ProvisionSpu
from sc.connection_manager import ConnectionManager
from sc.controllers import Reducer
from sc.controllers.events import ControllerEvent, ElectPreferred, Reconcile
from sc.dispatcher import Dispatcher
from sc.kv import KvStore, RedisKvStore
from sc.local_store import Change, LocalStore
from sc.metrics import ScMetrics
from sc.private_api import PrivateApi
from sc.provisioner import LocalProcessProvisioner, NullProvisioner, Provisioner
from sc.public_api import PublicApi
from sc.rebuild import Rebuilder
from sc.settings import ScSettings
from sc.spu_secrets import record_verifier
from sc.updaters import ActionDispatcher, KvUpdater, ProvisionerUpdater
from spark_stream.auth import load_key
from spark_stream.metrics import MetricsEndpoint
from spark_stream.models import ConsumerGroup, Partition, SpuGroup, SpuGroupResolution
from spark_stream.net.budget import RequestBudget
from spark_stream.net.endpoint import Endpoint
from spark_stream.net.tls import server_context

__all__ = ["ScApp"]

log = logging.getLogger(__name__)


class ScApp:
    """One Streaming Controller.

    Args:
        settings: ports, Redis URL and password, heartbeat timeout, data dir.
        kv: the KV store; default a ``RedisKvStore`` on ``settings.redis_url``.
        provisioner: runs managed SPUs; default a ``LocalProcessProvisioner`` when
            ``spu_command`` is given, else one that runs nothing.
        spu_command: argv template of a managed SPU process (see ``sc.provisioner``).
        reducers: the controllers; default ``sc.controllers.REDUCERS``.
        reconcile_interval_s: period of the reconcile sweep; default
            ``max(heartbeat_timeout_s, 10)``.
    """

    def __init__(
        self,
        settings: ScSettings,
        *,
        kv: KvStore | None = None,
        provisioner: Provisioner | None = None,
        spu_command: Sequence[str] | None = None,
        reducers: Mapping[str, Reducer] | None = None,
        reconcile_interval_s: float | None = None,
    ) -> None:
        self.settings = settings
        self.kv: KvStore = kv or RedisKvStore(
            settings.redis_url, prefix=settings.key_prefix, password=settings.redis_password()
        )
        self.store = LocalStore()
        self._provisioner = provisioner
        self._spu_command = list(spu_command) if spu_command else None
        self.reconcile_interval_s = reconcile_interval_s or max(settings.heartbeat_timeout_s, 10.0)
        self.cm = ConnectionManager(
            settings.heartbeat_timeout_s,
            self._submit,
            revision=lambda: self.store.revision,
        )
        self.provisioner_updater = ProvisionerUpdater(NullProvisioner())
        self.actions = ActionDispatcher(KvUpdater(self.kv), self.cm, self.provisioner_updater)
        self.dispatcher = Dispatcher(self.kv, self.store, self.actions.execute, reducers)
        self.dispatcher.add_listener(self._groups_changed)
        self.dispatcher.add_listener(self._statuses_changed)
        self.lost = asyncio.Event()
        """Set when the store lost data while this SC ran (see the module doc)."""
        self.dispatcher.on_store_lost = self._store_lost
        self.rebuilder = Rebuilder(self.kv, self.dispatcher, lambda: self.cm.store_id)
        self.budget = RequestBudget(settings.request_budget_bytes)  # both servers share it
        self.private = PrivateApi(
            self.cm,
            self.dispatcher,
            self.kv,
            host=settings.host,
            port=settings.private_port,
            budget=self.budget,
            tls=server_context(settings.tls),
            rebuilder=self.rebuilder,
        )
        self.public = PublicApi(
            self.kv,
            self.dispatcher,
            host=settings.host,
            port=settings.public_port,
            group_defaults=settings.group_defaults(),
            gates=self.cm,
            tier_root=settings.tier_root,
            kv_budget_s=settings.admin_kv_timeout_s,
            budget=self.budget,
            tls=server_context(settings.tls),
            auth_key=load_key(settings.auth_key_file) if settings.auth_key_file else None,
        )
        self._timer: asyncio.Task[None] | None = None
        self._rebalance_timer: asyncio.Task[None] | None = None
        self._started = False
        self.metrics: ScMetrics | None = None
        self._endpoint: MetricsEndpoint | None = None
        if settings.metrics_port is not None:
            self._instrument()

    def _instrument(self) -> None:
        """Hook the metrics into the loop, the KV store and both servers."""
        servers = {"public": self.public.server, "private": self.private.server}
        metrics = self.metrics = ScMetrics(self.store, self.dispatcher, self.cm, servers)
        self.dispatcher.on_batch = metrics.on_batch
        if isinstance(self.kv, RedisKvStore):
            self.kv.on_op = metrics.on_kv_op
        for server in servers.values():
            server.on_request = metrics.on_request

    @property
    def metrics_url(self) -> str | None:
        """Where Prometheus scrapes this SC (after ``start``; None when metrics are off)."""
        return self._endpoint.url if self._endpoint is not None else None

    @property
    def provisioner(self) -> Provisioner:
        """The provisioner in use (set during ``start``)."""
        return self.provisioner_updater.provisioner

    @property
    def public_port(self) -> int:
        """The public server's bound port."""
        return self.public.port

    @property
    def private_port(self) -> int:
        """The private server's bound port."""
        return self.private.port

    def _submit(self, event: ControllerEvent) -> None:
        self.dispatcher.submit(event)

    def _store_lost(self, reason: str) -> None:
        self.lost.set()

    def _groups_changed(self, changes: list[Change], resync: bool) -> None:
        """Consumer groups changed in the mirror: the CM pushes the delivery gates."""
        if resync or any(change.kind == ConsumerGroup.kind for change in changes):
            groups = self.store.objects(ConsumerGroup.kind)
            self.cm.sync_groups(g for g in groups if isinstance(g, ConsumerGroup))

    def _statuses_changed(self, changes: list[Change], resync: bool) -> None:
        """Partition statuses changed in the mirror: the CM forwards the next reports."""
        if resync:
            self.cm.forget_reports()
            return
        self.cm.forget_reports(
            change.name
            for change in changes
            if change.kind == Partition.kind
            and isinstance(change.old, Partition)
            and isinstance(change.new, Partition)
            and change.old.status != change.new.status
        )

    async def start(self) -> None:
        """Load the state, start the controllers and both servers.

        Raises:
            KvUnavailableError: Redis did not answer within its reconnect timeout.
            OSError: a port cannot be bound.
        """
        if self._started:
            raise RuntimeError("the SC is already started")
        self._started = True
        try:
            self._serve_metrics()
            self.cm.store_id = await self.kv.store_id()
            await self.private.start()
            self.provisioner_updater.provisioner = self._make_provisioner()
            await self.dispatcher.load()
            self.dispatcher.start()
            await self.public.start()
            await self._ensure_managed()
        except BaseException:
            await self.stop()
            raise
        self._timer = asyncio.get_running_loop().create_task(
            self._reconcile_loop(), name="sc-reconcile"
        )
        if self.settings.leader_rebalance_enabled:
            self._rebalance_timer = asyncio.get_running_loop().create_task(
                self._rebalance_loop(), name="sc-leader-rebalance"
            )
        log.info(
            "sc started public=%s:%d private=%s:%d revision=%d",
            self.settings.host,
            self.public_port,
            self.settings.host,
            self.private_port,
            self.store.revision,
        )

    def _serve_metrics(self) -> None:
        if self.metrics is None or self.settings.metrics_port is None:
            return
        self.metrics.install(asyncio.get_running_loop())
        endpoint = MetricsEndpoint(
            self.metrics.registry, self.settings.host, self.settings.metrics_port
        )
        endpoint.start()  # OSError names the port
        self._endpoint = endpoint

    def _make_provisioner(self) -> Provisioner:
        if self._provisioner is not None:
            return self._provisioner
        if self._spu_command:
            return LocalProcessProvisioner(
                self._spu_command,
                self.settings.data_dir,
                sc_endpoint=self.settings.spu_sc_endpoints
                or str(Endpoint(self.settings.host, self.private_port)),
                record_secret=functools.partial(record_verifier, self.kv),
                # Managed SPUs check client tokens with the SC's key (auth on or off alike).
                env=(
                    {"FLUVIO_SPU_AUTH_KEY_FILE": self.settings.auth_key_file}
                    if self.settings.auth_key_file
                    else None
                ),
            )
        return NullProvisioner()

    async def _ensure_managed(self) -> None:
        """Provision every managed SPU of a reserved group (adopt, or restart the dead)."""
        wanted = []
        for spu in self.store.spus():
            parent = spu.metadata.parent
            if parent is None or parent.kind != SpuGroup.kind:
                continue
            group = self.store.spu_group(parent.name)
            if group is None or group.status.resolution is not SpuGroupResolution.RESERVED:
                continue
            if spu.spu_id in group.spec.spu_ids:
                wanted.append(ProvisionSpu(spu.spu_id, spu.name, group.name, group.spec.template))
        try:
            await self.provisioner.ensure(wanted)
        except Exception:
            log.exception("provisioning managed SPUs failed")

    async def _reconcile_loop(self) -> None:
        self.dispatcher.submit(Reconcile())
        await asyncio.sleep(self.settings.heartbeat_timeout_s)  # SPUs had time to reconnect
        while True:
            self.dispatcher.submit(Reconcile(self.cm.connected_ids()))
            await self._ensure_managed()
            await asyncio.sleep(self.reconcile_interval_s)  # periodic drift repair

    async def _rebalance_loop(self) -> None:
        event = ElectPreferred(
            limit=self.settings.leader_rebalance_max_moves,
            imbalance_pct=self.settings.leader_imbalance_pct,
        )
        while True:
            await asyncio.sleep(self.settings.leader_rebalance_interval_s)
            self.dispatcher.submit(event)

    async def stop(self, *, keep_spus: bool = False) -> None:
        """Stop the controllers, then the servers, the managed SPUs and the KV client.

        Args:
            keep_spus: leave the managed SPUs running: the store lost them (the next SC
                rebuilds from their reports), or this SC steps down (the next active SC
                adopts them).
        """
        if keep_spus and isinstance(self.provisioner, LocalProcessProvisioner):
            self.provisioner.stop_on_close = False
        for timer in (self._timer, self._rebalance_timer):
            if timer is not None:
                timer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await timer
        self._timer = self._rebalance_timer = None
        await self.dispatcher.stop()
        await self.public.stop()
        await self.private.stop()
        with contextlib.suppress(Exception):
            await self.provisioner.close()
        await self.kv.close()
        if self._endpoint is not None:
            await asyncio.to_thread(self._endpoint.stop)  # shutdown() waits for its poll
            self._endpoint = None
        log.info("sc stopped")
