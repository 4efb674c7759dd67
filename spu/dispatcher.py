"""The SPU dispatcher: SC specs in, leader and follower controllers out.

Theory of operation (seed ``002``, "Dispatch SPU/Partition"). The dispatcher holds the
SPU specs and the replica entries the SC pushed (``UpdateSpus``, ``UpdateReplicas``: a
full push replaces the view, an incremental one applies changes newer than the held
revision). After each replica push it reconciles the running controllers with the
entries: a pure reducer (``spu.dispatch_plan``) turns the entries and a snapshot of the
running roles into role changes, which this module runs. After each SPU push, leaders
learn at once which follower SPUs went offline and follower controllers learn their
leader's private endpoint.

Storage. Replica directories are opened, removed and listed off the event loop by
``spu.replica_files``, which holds their incarnation rules (a directory of another
partition uid is emptied before it opens). ``UpdateReplicas.purge`` names deleted
partitions: their replicas are dropped and their directories deleted.

Reconciliation runs under one lock, so controllers never overlap on a log. A
housekeeping task (``spu.housekeeping``) fsyncs the logs off the event loop, checkpoints
high watermarks and applies retention.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from spark_stream.errors import (
    FluvioError,
    NotLeaderError,
    UnknownPartitionError,
    UnknownTopicError,
)
from spark_stream.models import Spu, SpuResolution, parse_partition_name, partition_name
from spark_stream.net.tls import client_context
from spark_stream.protocol import UpdateGates
from spark_stream.protocol.control import (
    Replica,
    ReplicaId,
    ReplicaMeta,
    UpdateReplicas,
    UpdateSpus,
)
from spark_stream.records import now_us
from spu._tasks import cancel_and_wait
from spu.dispatch_plan import (
    Action,
    CloseLog,
    OpenLog,
    RemoveStorage,
    Roles,
    SetFollowed,
    StartFollower,
    StartLeader,
    StopFollower,
    StopLeader,
    UpdateLeader,
    merge_replicas,
    plan_controllers,
    plan_logs,
    storage_config,
)
from spu.follower import FollowerController, idle_report_interval_s
from spu.gate_audit import AuditFile
from spu.gates import GateKey, GateTable, GateUpdate
from spu.housekeeping import Housekeeper
from spu.leader import LeaderController, check_leader_epoch, monotonic_ms
from spu.notify import Subscribers
from spu.peer_keys import PeerKeyring
from spu.replica_files import open_replica, remove_replica, stored_replicas, write_meta
from spu.scrubber import Scrubber
from spu.settings import SpuSettings
from spu.storage import ReplicaLog
from spu.storage.open_files import OPEN_FILES
from spu.storage.replica_meta import list_replica_meta
from spu.storage.scrub import Damage
from spu.tiering import TierKeeper
from spu.traffic import PartitionTraffic

__all__ = ["SpuDispatcher"]

logger = logging.getLogger(__name__)


_OPEN_CONCURRENCY = 4
"""Replica logs opened at once in worker threads (``SpuDispatcher._open_all``)."""


class SpuDispatcher:
    """Dispatches the SC's specs to leader and follower controllers.

    Args:
        settings: this SPU's settings (id, data directory, lag and size limits).
        on_status: called with a partition name when its leader's live status changed.
        clock: monotonic milliseconds for the leader controllers.
    """

    def __init__(
        self,
        settings: SpuSettings,
        *,
        on_status: Callable[[str], None] | None = None,
        clock: Callable[[], int] = monotonic_ms,
    ) -> None:
        self.settings = settings
        self.spu_id = settings.id
        self.on_status = on_status
        self._clock = clock
        self._spus: dict[int, Spu] = {}
        self._replicas: dict[str, Replica] = {}
        self._logs: dict[str, ReplicaLog] = {}
        self._log_uids: dict[str, str | None] = {}  # the incarnation each open log stores
        self._meta_kept: dict[str, ReplicaMeta] = {}  # the replica.json last written
        self.store_id = ""
        """The SC store's identity (``SpuConnectAccepted.store_id``; set by the SC link):
        written with each replica's metadata; none is written while it is unknown."""
        self._leaders: dict[str, LeaderController] = {}
        self.traffic: dict[str, PartitionTraffic] = {}
        """Produce and fetch totals by partition name, kept across leaderships."""
        self._followers: dict[int, FollowerController] = {}
        self.peer_keys = PeerKeyring()
        """The keys shared with each peer SPU (from the SC's ``UpdateSpus``)."""
        self._roles = Subscribers()
        self._audit_file: AuditFile | None = None
        if settings.gate_audit_file:
            # Relative to the data directory, so the SPUs of one cluster sharing
            # settings write one file each.
            self._audit_file = AuditFile(Path(settings.data_dir) / settings.gate_audit_file)
        self.gates = GateTable(spu=settings.id, on_change=self._audit_file)
        """The delivery gates of the partitions led here (fed by the SC link)."""
        self._lock = asyncio.Lock()
        self._housekeeping: asyncio.Task[None] | None = None
        self._tiering: asyncio.Task[None] | None = None
        self.housekeeper: Housekeeper | None = None
        """The running housekeeping (after ``start``)."""
        self._scrubbing: asyncio.Task[None] | None = None
        self.scrubber: Scrubber | None = None
        """The running scrub of sealed segments (after ``start``; None when it is off)."""
        self.tier_keeper = TierKeeper(
            lambda: self._logs,
            lambda: self._replicas,
            lambda name: name in self._leaders,
            on_status=self._tier_status,
            interval_s=settings.tier_interval_s,
            concurrency=settings.tier_concurrency,
            now_us=now_us,
        )
        """Tiering of the partitions led here (``spu.tiering``)."""

    # -- lookups ---------------------------------------------------------------------

    def leader(self, name: str) -> LeaderController | None:
        """The running leader controller of ``name``, if this SPU leads it."""
        return self._leaders.get(name)

    def leaders(self) -> list[LeaderController]:
        """Every running leader controller."""
        return list(self._leaders.values())

    def logs(self) -> dict[str, ReplicaLog]:
        """Every open replica log by partition name (leaders' and followers')."""
        return dict(self._logs)

    def follower(self, leader_id: int) -> FollowerController | None:
        """The follower controller for replicas led by ``leader_id``."""
        return self._followers.get(leader_id)

    def log(self, name: str) -> ReplicaLog | None:
        """The open log of replica ``name``, if this SPU holds it."""
        return self._logs.get(name)

    def replica(self, name: str) -> Replica | None:
        """The replica entry held for ``name``."""
        return self._replicas.get(name)

    def lookup(self, topic: str, partition: int, leader_epoch: int = -1) -> LeaderController:
        """The partition's leader controller here, or the typed reason there is none.

        Args:
            leader_epoch: the epoch the request carries (-1: not checked). It is checked
                against the replica entry the SC pushed, before leadership (as Kafka
                does), so a deposed leader that has heard of the election answers
                ``FencedLeaderEpochError`` to a requester that has not; and a request
                carrying an epoch is served only while that entry names this SPU leader.

        Raises:
            FencedLeaderEpochError, UnknownLeaderEpochError: see ``check_leader_epoch``.
            NotLeaderError: this SPU holds the replica but does not lead it.
            UnknownPartitionError: it holds other partitions of the topic, not this one.
            UnknownTopicError: it holds no replica of the topic.
        """
        name = partition_name(topic, partition)
        leader = self._leaders.get(name)
        if leader_epoch >= 0 and (entry := self._replicas.get(name)) is not None:
            check_leader_epoch(name, entry.leader_epoch, leader_epoch)
            if entry.leader != self.spu_id:
                leader = None  # stepping down: its controller stops in this reconcile
        if leader is not None:
            return leader
        replica = self._replicas.get(name)
        if replica is not None and replica.leader == self.spu_id:
            # Its log is still opening (off the loop), or it failed to start: retry.
            raise NotLeaderError(f"SPU {self.spu_id} does not serve {name} as its leader yet")
        if replica is not None:
            raise NotLeaderError(
                f"SPU {self.spu_id} does not lead {name} (leader: {replica.leader})"
            )
        if any(r.topic == topic for r in self._replicas.values()):
            raise UnknownPartitionError(f"SPU {self.spu_id} holds no replica of {name}")
        raise UnknownTopicError(f"SPU {self.spu_id} holds no replica of topic {topic!r}")

    def subscribe_roles(self, event: asyncio.Event) -> None:
        """Set ``event`` whenever leader controllers start or stop."""
        self._roles.add(event)

    def unsubscribe_roles(self, event: asyncio.Event) -> None:
        """Stop setting ``event``."""
        self._roles.discard(event)

    def is_online(self, spu_id: int) -> bool:
        """Whether ``spu_id`` may be up: only an SPU the SC reports ``Offline`` is not."""
        spu = self._spus.get(spu_id)
        return spu is None or spu.status.resolution is not SpuResolution.OFFLINE

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start housekeeping (flush policy, retention, idle files) and tiering."""
        OPEN_FILES.configure(
            capacity=self.settings.open_segments_max, idle_s=self.settings.segment_idle_close_s
        )
        keeper = Housekeeper(
            lambda: self._logs,
            retention_every_s=self.settings.retention_interval_s,
            floor=self.tier_keeper.floor,
        )
        self.housekeeper = keeper
        loop = asyncio.get_running_loop()
        self._housekeeping = loop.create_task(keeper.run(), name="spu-housekeeping")
        self._tiering = loop.create_task(self.tier_keeper.run(), name="spu-tiering")
        if self.settings.scrub_mb_per_s > 0:
            self.scrubber = Scrubber(
                lambda: self._logs,
                self.damage_found,
                mb_per_s=self.settings.scrub_mb_per_s,
                pass_interval_s=self.settings.scrub_pass_interval_s,
            )
            self._scrubbing = loop.create_task(self.scrubber.run(), name="spu-scrub")

    def damage_found(self, name: str, log: ReplicaLog, damage: Damage) -> None:
        """A damaged frame in ``name``'s log (the scrub's news): mark it and repair it.

        Leading here: the leader records it and reports its replica damaged, so the SC
        elects a healthy replica and this one repairs as its follower. Following: the
        follower controller cuts the log at the damage and fetches the rest again.
        """
        if self._logs.get(name) is not log:
            return  # closed or replaced meanwhile
        leader = self._leaders.get(name)
        if leader is not None:
            leader.damaged(damage)
            return
        if log.damage is None or damage.offset < log.damage.offset:
            log.damage = damage
        replica = self._replicas.get(name)
        leader_id = None if replica is None else replica.leader
        follower = None if leader_id is None else self._followers.get(leader_id)
        if follower is not None:
            follower.repair(name)

    async def stop(self) -> None:
        """Stop every controller and close every log."""
        await cancel_and_wait(self._scrubbing)
        await cancel_and_wait(self._housekeeping)
        await cancel_and_wait(self._tiering)
        async with self._lock:
            for leader in list(self._leaders.values()):
                await leader.stop()
            self._leaders.clear()
            for follower in list(self._followers.values()):
                await follower.stop()
            self._followers.clear()
            self._roles.notify()
            for name in list(self._logs):
                self._close(name)
            if self._audit_file is not None:
                self._audit_file.close()

    # -- SC pushes -------------------------------------------------------------------

    async def apply_spus(self, update: UpdateSpus) -> None:
        """Take an ``UpdateSpus`` push (endpoints and online status of every SPU)."""
        spus = update.spu_objects()
        async with self._lock:
            self.peer_keys.apply(update)
            before = {i for i in self._spus if self.is_online(i)}
            if update.full:
                self._spus = {}
            for spu_id in update.deleted:
                self._spus.pop(spu_id, None)
            for spu in spus:
                self._spus[spu.spu_id] = spu
            online = {i for i in self._spus if self.is_online(i)}
            if online != before:
                logger.info("spus online=%s (was %s)", sorted(online), sorted(before))
            for leader in self._leaders.values():
                for follower in leader.followers:
                    if not self.is_online(follower):
                        leader.spu_offline(follower)
            self._route_followers()

    def apply_gates(self, update: UpdateGates) -> None:
        """Apply the SC's delivery gates and wake the streams of the gates that changed.

        A full push also drops the groups it does not name (deleted while away).

        Raises:
            InvalidRequestError: a malformed entry; nothing is applied then.
        """
        updates = [
            GateUpdate(e.group, e.topic, e.partition, e.member, e.grant_epoch, e.generation)
            for e in update.entries()
        ]
        changed: list[GateKey] = list(self.gates.apply(updates).changed)
        gone = set(update.deleted_groups)
        if update.full:
            gone |= set(self.gates.applied_generations()) - set(update.groups)
        for group in sorted(gone):
            changed += self.gates.drop_group(group)
        for topic, partition in {(key[1], key[2]) for key in changed}:
            leader = self._leaders.get(partition_name(topic, partition))
            if leader is not None:
                leader.wake()

    async def apply_replicas(self, update: UpdateReplicas) -> None:
        """Take an ``UpdateReplicas`` push and reconcile the controllers with it.

        Purged incarnations leave the view (their partition is gone, whatever an earlier
        entry said), and their directories are deleted once their logs are closed.
        """
        entries, purge = update.replica_entries(), update.purge_entries()
        async with self._lock:
            self._replicas = merge_replicas(
                self._replicas, entries, full=update.full, deleted=update.deleted, purge=purge
            )
            await self._reconcile(purge)
            await self._keep_meta()

    async def set_replicas(self, replicas: Iterable[Replica]) -> None:
        """Replace the whole replica view (what a full ``UpdateReplicas`` does)."""
        await self.apply_replicas(UpdateReplicas.build(replicas, full=True))

    def stored_replicas(self) -> list[ReplicaId]:
        """Every replica directory in the data directory, with the uid it holds.

        What the SPU reports when it connects (``SpuConnectRequest.stored``); a
        directory whose name is not a partition name is not reported.
        """
        return stored_replicas(self.settings.data_dir)

    def stored_meta(self) -> list[ReplicaMeta]:
        """The metadata kept in every replica directory (``spu.storage.replica_meta``).

        What the SPU reports when it connects (``SpuConnectRequest.replica_meta``), so an
        SC whose store forgot these partitions rebuilds them.
        """
        return list_replica_meta(Path(self.settings.data_dir))

    async def _keep_meta(self) -> None:
        """Write ``replica.json`` of each open replica whose entry changed (off the loop).

        Only for a log open on the entry's incarnation, and only once the store's
        identity is known; a failed write is logged, the replica keeps serving.
        """
        if not self.store_id:
            return
        changed = []
        for name, replica in self._replicas.items():
            if name not in self._logs or self._log_uids.get(name) != replica.uid:
                continue
            meta = ReplicaMeta(self.store_id, replica)
            if self._meta_kept.get(name) != meta:
                changed.append(meta)
        for name in set(self._meta_kept) - set(self._logs):
            del self._meta_kept[name]  # closed: written again when it reopens
        if changed:
            written = await asyncio.to_thread(write_meta, self.settings.data_dir, changed)
            self._meta_kept.update((meta.replica.name, meta) for meta in written)

    # -- reconciliation --------------------------------------------------------------

    def _snapshot(self) -> Roles:
        """What runs now, for the planner."""
        return Roles(
            leaders=tuple(self._leaders),
            logs=dict(self._log_uids),
            followers={i: frozenset(c.replicas) for i, c in self._followers.items()},
        )

    async def _reconcile(self, purge: Iterable[ReplicaId] = ()) -> None:
        """Plan and run the role changes in two halves (``spu.dispatch_plan``).

        The controllers are planned on a fresh snapshot, so a log that failed to open
        gets neither a leader nor a follower.
        """
        replicas = list(self._replicas.values())
        opens: list[Replica] = []
        for action in plan_logs(self.spu_id, replicas, self._snapshot(), purge):
            if isinstance(action, OpenLog):
                opens.append(action.replica)  # opened together, in their place
                continue
            await self._open_all(opens)
            opens = []
            await self._run(action)
        await self._open_all(opens)
        for action in plan_controllers(self.spu_id, replicas, self._snapshot()):
            await self._run(action)
        self._route_followers()
        self._roles.notify()

    async def _run(self, action: Action) -> None:
        """Carry out one planned action (the plan only hands controllers open logs)."""
        match action:
            case StopLeader(name):
                leader = self._leaders.pop(name)
                self.gates.drop_partition(*parse_partition_name(name))
                await leader.stop()
            case SetFollowed(leader_id, names):
                logs = {name: self._logs[name] for name in names}
                await self._followers[leader_id].set_replicas(logs)
            case CloseLog(name):
                self._close(name)
            case OpenLog(replica):
                await self._open(replica)
            case RemoveStorage(replica):
                # Off the loop, as opens: deleting a topic of 1,000 partitions
                # removes 1,000 directories.
                await asyncio.to_thread(remove_replica, self.settings.data_dir, replica)
            case StartLeader(replica):
                self._start_leader(replica)
            case UpdateLeader(replica):
                self._leaders[replica.name].update(replica)
            case StartFollower(leader_id):
                controller = FollowerController(
                    self.spu_id,
                    leader_id,
                    self.peer_keys,
                    report_interval_s=idle_report_interval_s(self.settings.replica_max_lag_ms),
                    tls=client_context(self.settings.tls),
                )
                controller.start()
                self._followers[leader_id] = controller
            case StopFollower(leader_id):
                await self._followers.pop(leader_id).stop()

    def _start_leader(self, replica: Replica) -> None:
        """Start leading ``replica`` (producer state rebuilt from its log)."""
        leader = LeaderController(
            replica,
            self._logs[replica.name],
            spu_id=self.spu_id,
            max_lag_ms=self.settings.replica_max_lag_ms,
            max_batch_bytes=self.settings.max_batch_bytes,
            is_online=self.is_online,
            on_status=self.on_status,
            clock=self._clock,
            traffic=self.traffic.setdefault(replica.name, PartitionTraffic()),
        )
        try:
            leader.start()
        except Exception:  # one bad replica must not keep the others down
            logger.exception("cannot lead partition=%s", replica.name)
            return
        self._leaders[replica.name] = leader

    def _tier_status(self, name: str, text: str) -> None:
        """The tier keeper's news for a partition led here: into its LRS."""
        leader = self._leaders.get(name)
        if leader is not None and leader.tier_status != text:
            leader.tier_status = text
            if self.on_status is not None:
                self.on_status(name)

    def _route_followers(self) -> None:
        for leader_id, controller in self._followers.items():
            spu = self._spus.get(leader_id)
            if spu is not None:
                endpoint = spu.spec.private_endpoint
                controller.set_endpoint(endpoint.host, endpoint.port)

    async def _open_all(self, replicas: list[Replica]) -> None:
        """Open the logs of ``replicas`` (distinct partitions), ``_OPEN_CONCURRENCY`` at
        a time: each open waits mostly on fsyncs, which overlap."""
        if not replicas:
            return
        slots = asyncio.Semaphore(_OPEN_CONCURRENCY)

        async def one(replica: Replica) -> None:
            async with slots:
                await self._open(replica)

        # Every open ends before this returns (under the reconcile lock), even if one
        # raised: the first error is raised then.
        results = await asyncio.gather(*(one(r) for r in replicas), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _open(self, replica: Replica) -> None:
        """Open ``data_dir/{topic}-{partition}`` (the same incarnation, the same data).

        The files are created or recovered off the event loop (``open_replica``): a
        push of 1,000 new replicas used to hold the loop for seconds (a uid file, an
        index and their directory fsyncs each), long enough for the SC to drop this SPU
        for want of heartbeats. The log is registered on the loop once open.
        """
        config = storage_config(
            replica.spec,
            max_batch_bytes=self.settings.max_batch_bytes,
            check_payload=self.settings.frame_validation,
        )
        opening = asyncio.ensure_future(
            asyncio.to_thread(open_replica, self.settings.data_dir, replica, config)
        )
        try:
            log = await asyncio.shield(opening)
        except asyncio.CancelledError:
            # The thread cannot be stopped. The log it opens is registered all the same
            # (the next reconcile keeps or closes it): dropped, it would hold its
            # directory's lock and the replica could not be opened again.
            log = await opening
            if log is not None:
                self._register(replica, log)
            raise
        if log is not None:
            self._register(replica, log)

    def _register(self, replica: Replica, log: ReplicaLog) -> None:
        """Take an opened log into the running roles."""
        self._logs[replica.name] = log
        self._log_uids[replica.name] = replica.uid
        logger.info(
            "replica attached partition=%s uid=%s dir=%s leo=%d hw=%d",
            replica.name,
            replica.uid,
            log.directory,
            log.leo,
            log.hw,
        )

    def _close(self, name: str) -> None:
        """Close the log of ``name``; the directory stays for a later reattach."""
        log = self._logs.pop(name)
        del self._log_uids[name]
        try:
            log.close()
        except FluvioError as exc:
            logger.error("closing replica partition=%s failed: %s", name, exc)
        logger.info("replica detached partition=%s (storage kept)", name)
