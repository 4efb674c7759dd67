"""The SC group coordinator: member sessions in memory, plans in the KV.

Theory of operation (``docs/consumer-groups.md``, "Coordinator"). Every event about a
group (a join, heartbeat timeout, release, leave, closed connection, rebalance timeout,
topic change, SC start) is reduced by the pure reducer (``sc.controllers.group``) one at
a time per group (a lock per group), on a snapshot made of the group object as last
published (kept here, read back from the KV on a conflict), the topics' partition
counts from the local store, and the live sessions (``member_id -> connection``). The
actions run in order: ``PublishPlan`` (compare-and-set; on ``ConflictError`` the group is
re-read and the event reduced again), ``FenceMember`` (its ``GROUP_JOIN`` stream ends
with ``FencedMemberError``), ``PushAssignment`` (queued on the member's stream). Gates
are not sent from here: the SC's gate distribution reads the published plans. Before it
pushes grants, the coordinator waits (``GateAcks.wait_gates``, at most 200 ms) until the
partitions' leaders report holding the plan's generation, so the member's first fetch
finds its gate; past the bound it pushes anyway (the gate fails closed and the member
retries on ``GateNotReadyError``).

Liveness costs no KV write: heartbeats only move a deadline in memory. A sweeper task
expires members whose deadline passed (``MemberExpired(SESSION_TIMEOUT)``) and members
that kept a revoke past the rebalance timeout (``RebalanceTimedOut``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sc.controllers.group import (
    ExpiryCause,
    FenceMember,
    GroupAction,
    GroupEvent,
    GroupSnapshot,
    MemberExpired,
    MemberJoined,
    MemberLeft,
    PartitionsReleased,
    PublishPlan,
    PushAssignment,
    RebalanceTimedOut,
    Reject,
    Seed,
    TopicDeleted,
    TopicPartitionsChanged,
    check_epoch,
    reduce,
    view_of,
)
from sc.groups.metrics import GroupMetrics
from sc.kv import GROUP_KIND, Grant
from sc.kv.store import KvStore
from sc.local_store import Change, StoreView
from spark_stream.errors import (
    ConflictError,
    FencedMemberError,
    UnknownGroupError,
    UnknownMemberError,
)
from spark_stream.models import (
    ConsumerGroup,
    ConsumerGroupSpec,
    ConsumerGroupStatus,
    GroupKind,
    GroupState,
    Topic,
)
from spark_stream.protocol import control as c

__all__ = ["GroupCoordinator"]

log = logging.getLogger(__name__)

_SWEEP_S = 0.1  # how often deadlines are checked
_RETRIES = 20  # compare-and-set attempts per event before giving up
GATE_WAIT_S = 0.2  # longest wait for the leaders' gates before pushing grants (brief 4.6)


class GateAcks(Protocol):
    """The SPUs' reports of applied gates (the SC's connection manager)."""

    async def wait_gates(
        self, group: str, needs: Mapping[tuple[str, int], int], timeout_s: float
    ) -> bool:
        """Wait until each partition's leader applied ``group``'s plan at the generation
        ``needs`` gives it, at most ``timeout_s``; return whether they all did."""
        ...

    def group_rejections(self, group: str) -> dict[str, int]:
        """The group fetches the leaders' gates refused, per reason."""
        ...


@dataclass
class _Stream:
    """One member's ``GROUP_JOIN`` stream: the pushes waiting to be sent."""

    group: str
    member_id: str
    connection: int
    queue: asyncio.Queue[c.GroupAssignment | BaseException | None] = field(
        default_factory=asyncio.Queue
    )
    last: c.GroupAssignment | None = None

    async def pushes(self) -> AsyncIterator[c.GroupAssignment]:
        while True:
            item = await self.queue.get()
            if item is None:  # the member left
                return
            if isinstance(item, BaseException):
                raise item
            yield item


class GroupCoordinator:
    """Member sessions and plan publication for every consumer group.

    Args:
        kv: the KV store (plans, commits, offsets).
        store: the SC's local mirror (topics and the stored group objects at start).
        defaults: the spec of a group a join creates (``ScSettings.group_defaults``).
        clock: monotonic seconds (deadlines).
        gates: the SPUs' gate reports; ``None`` pushes grants without waiting.
    """

    def __init__(
        self,
        kv: KvStore,
        store: StoreView,
        *,
        defaults: ConsumerGroupSpec | None = None,
        clock: Callable[[], float] = time.monotonic,
        gates: GateAcks | None = None,
    ) -> None:
        self.kv = kv
        self.gates = gates
        self.defaults = defaults or ConsumerGroupSpec()
        self.store = store
        self.clock = clock
        self._groups: dict[str, ConsumerGroup] = {}
        self._deleted: dict[str, int] = {}  # name -> last revision, until the mirror drops it
        self._locks: dict[str, asyncio.Lock] = {}
        self._sessions: dict[str, dict[str, int]] = {}  # group -> member -> connection
        self._streams: dict[tuple[str, int], _Stream] = {}  # (group, connection)
        # connection -> groups joined on it (a superset of where its sessions are), so a
        # closed connection looks at its own groups, not at every session
        self._conn_groups: dict[int, set[str]] = {}
        self._deadlines: dict[tuple[str, str], float] = {}  # session deadlines
        self._rebalance: dict[tuple[str, str], tuple[int, float]] = {}  # (epoch, deadline)
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()  # topic events being reduced
        self._stopping = False
        self._metrics: dict[str, GroupMetrics] = {}

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Seed every stored group (nothing moves) and start the sweeper."""
        for obj in self.store.objects(GROUP_KIND):
            assert isinstance(obj, ConsumerGroup)
            self._groups[obj.name] = obj
            now = self.clock()
            for member in obj.status.members:
                self._deadlines[(obj.name, member.member_id)] = now + self._session_s(obj)
            await self._run(obj.name, Seed())
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep(), name="groups")

    def stopping(self) -> None:
        """The SC is shutting down: closing connections no longer ends member sessions.

        The plan stays as published, so members resume it unchanged after the restart.
        """
        self._stopping = True

    async def stop(self) -> None:
        """Stop the sweeper."""
        self._stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper

    # -- reads -----------------------------------------------------------------------------

    def group(self, name: str) -> ConsumerGroup | None:
        """The group as last published (or as stored, for a group not touched here)."""
        obj = self.store.get(GROUP_KIND, name)
        if obj is not None and obj.revision <= self._deleted.get(name, -1):
            obj = None  # deleted here; the mirror has not seen it yet
        mine = self._groups.get(name)
        if mine is None or (obj is not None and obj.revision > mine.revision):
            return obj if isinstance(obj, ConsumerGroup) else None
        return mine

    def groups(self) -> list[ConsumerGroup]:
        """Every group, by name."""
        names = {o.name for o in self.store.objects(GROUP_KIND)} | set(self._groups)
        found = [self.group(n) for n in sorted(names)]
        return [g for g in found if g is not None]

    def metrics(self, name: str) -> GroupMetrics:
        """The group's counters since this SC started (see ``sc.groups.metrics``)."""
        return self._metrics.setdefault(name, GroupMetrics())

    def report(self, name: str) -> dict[str, Any]:
        """The group's counters and its gates' refusals at the SPUs, for ``describe``."""
        group = self.group(name)
        members = 0 if group is None else len(group.status.members)
        report = self.metrics(name).to_dict(members)
        if self.gates is not None:
            report["gateRejections"] = self.gates.group_rejections(name)
        return report

    def live(self, name: str) -> dict[str, int]:
        """``member_id -> connection`` of the group's members with a session now."""
        return dict(self._sessions.get(name, {}))

    # -- member requests -------------------------------------------------------------------

    async def join(self, msg: c.GroupJoinRequest, connection: int, host: str) -> _Stream:
        """Open a member session; the returned stream already holds the first push.

        Raises:
            FluvioError: the join was refused (``Reject``); nothing changed.
        """
        stream = _Stream(msg.group, msg.member_id, connection)
        key = (msg.group, connection)
        event = MemberJoined(
            member_id=msg.member_id,
            connection=connection,
            member_epoch=msg.member_epoch,
            topics=tuple(msg.topics),
            pattern=msg.pattern,
            instance_id=msg.instance_id,
            client_id=msg.client_id,
            host=host,
            owned=msg.owned_partitions(),
            now_ms=int(time.time() * 1000),
        )
        async with self._lock(msg.group):
            if msg.group not in self._groups and self.group(msg.group) is None:
                await self._create(msg)
            previous = self._streams.get(key)
            self._streams[key] = stream
            self._conn_groups.setdefault(connection, set()).add(msg.group)
            try:
                await self._reduce_locked(msg.group, event)
            except BaseException:
                if previous is None:
                    self._streams.pop(key, None)
                else:
                    self._streams[key] = previous
                raise
            if stream.last is None:  # nothing changed for it: tell it where it stands
                self._push_view(msg.group, msg.member_id, connection)
        return stream

    async def heartbeat(
        self, msg: c.GroupHeartbeatRequest, connection: int
    ) -> c.GroupHeartbeatResponse:
        """Check the member's epoch and session; move its deadline (no KV write).

        Raises:
            UnknownMemberError: not a member (or its session is on another connection).
            FencedMemberError: a stale epoch.
        """
        group = self._known(msg.group, msg.member_id, connection)
        check_epoch(group.status, msg.member_id, msg.member_epoch, _tps(msg.owned))
        self._deadlines[(msg.group, msg.member_id)] = self.clock() + self._session_s(group)
        member = group.status.member(msg.member_id)
        assert member is not None  # check_epoch passed
        assigned, revoke = view_of(group.status, msg.member_id)
        return c.GroupHeartbeatResponse(
            group.status.generation,
            member.member_epoch,
            c.grant_list(assigned),
            c.grant_list(revoke),
        )

    async def release(self, msg: c.GroupReleaseRequest, connection: int) -> int:
        """The member released revoked partitions; returns the generation after."""
        group = self._known(msg.group, msg.member_id, connection)
        check_epoch(group.status, msg.member_id, msg.member_epoch, ())
        event = PartitionsReleased(msg.member_id, connection, c.tp_list(msg.partitions, "p"))
        await self._run(msg.group, event)
        return self._generation(msg.group)

    async def leave(self, msg: c.GroupLeaveRequest, connection: int) -> int:
        """The member leaves (``-1``) or pauses (``-2``); returns the generation after."""
        self._known(msg.group, msg.member_id, connection)
        await self._run(msg.group, MemberLeft(msg.member_id, connection, msg.member_epoch))
        self._unbind(msg.group, msg.member_id, connection)
        group = self.group(msg.group)
        if group is not None and group.status.member(msg.member_id) is not None:
            # A static member's pause: it keeps its grants for one session timeout.
            self._deadlines[(msg.group, msg.member_id)] = self.clock() + self._session_s(group)
        stream = self._streams.pop((msg.group, connection), None)
        if stream is not None:
            stream.queue.put_nowait(None)
        return self._generation(msg.group)

    def check_member(self, group: str, member_id: str) -> None:
        """A committer must be a member of the group.

        Raises:
            UnknownMemberError: it is not.
        """
        obj = self.group(group)
        if obj is None or obj.status.member(member_id) is None:
            raise UnknownMemberError(f"member_id: {member_id} is not a member of {group!r}")

    async def disconnected(self, connection: int) -> None:
        """A client connection closed: each member session on it expires now."""
        if self._stopping:
            return
        for group in sorted(self._conn_groups.pop(connection, set())):
            sessions = self._sessions.get(group, {})
            for member_id, conn in list(sessions.items()):
                if conn == connection:
                    event = MemberExpired(member_id, connection, ExpiryCause.CONNECTION_CLOSED)
                    obj = self.group(group)
                    if obj is not None:  # a static member keeps its grants this long
                        self._deadlines[(group, member_id)] = self.clock() + self._session_s(obj)
                    await self._guarded(group, event)
                    self._unbind(group, member_id, connection)
            self._streams.pop((group, connection), None)

    def on_changes(self, changes: list[Change], resync: bool) -> None:
        """Dispatcher listener: topic creations, growth and deletions feed the groups."""
        events: list[GroupEvent] = []
        for change in changes:
            if change.kind != Topic.kind:
                continue
            if isinstance(change.new, Topic):
                old = change.old
                if not isinstance(old, Topic) or old.spec.partitions != change.new.spec.partitions:
                    events.append(TopicPartitionsChanged(change.name, change.new.spec.partitions))
            elif change.new is None:
                events.append(TopicDeleted(change.name))
        if not events:
            return
        loop = asyncio.get_running_loop()
        for name, obj in list(self._groups.items()):
            named = {getattr(event, "topic", "") for event in events}
            topics = {g.topic for g in obj.status.assignment}
            topics.update(t for m in obj.status.members for t in m.subscribed(named))
            for event in events:
                if getattr(event, "topic", None) in topics:
                    task = loop.create_task(self._guarded(name, event), name=f"group-{name}")
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

    def forget(self, name: str, revision: int) -> None:
        """The group was deleted (``revision``: its last revision)."""
        self._groups.pop(name, None)
        self._deleted[name] = revision

    # -- the loop ----------------------------------------------------------------------------

    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    async def _run(self, name: str, event: GroupEvent) -> None:
        async with self._lock(name):
            await self._reduce_locked(name, event)

    async def _reduce_locked(self, name: str, event: GroupEvent) -> None:
        for _ in range(_RETRIES):
            group = self.group(name)
            if group is None:
                return
            snap = GroupSnapshot(group, self._topics(), self.live(name))
            actions = reduce(snap, event)
            for action in actions:
                if isinstance(action, Reject):
                    raise action.exception()
            try:
                await self._execute(name, actions)
                return
            except ConflictError as exc:
                if type(exc) is not ConflictError:  # e.g. MemberIdConflict: not a CAS miss
                    raise
                fresh = await self.kv.get(GROUP_KIND, name)
                if not isinstance(fresh, ConsumerGroup):
                    self._groups.pop(name, None)
                    return
                self._groups[name] = fresh
        raise ConflictError(f"group {name!r}: the plan kept changing; retry")

    async def _execute(self, name: str, actions: list[GroupAction]) -> None:
        waited = False
        for action in actions:
            match action:
                case PublishPlan():
                    owners = {tp: Grant(*grant) for tp, grant in action.owners().items()}
                    before = self.group(name)
                    stored = await self.kv.publish_group_plan(
                        name, action.status, owners, action.revision
                    )
                    assert isinstance(stored, ConsumerGroup)
                    self._groups[name] = stored
                    self._sync_sessions(name)
                    if before is not None:
                        self._count_plan(name, before.status, stored.status)
                case FenceMember():
                    self._fence(action)
                case PushAssignment():
                    if not waited:  # once per event, for every push's grants
                        waited = True
                        await self._wait_gates(name, actions)
                    self._push(action)
                case _:
                    pass  # gates: the SC's gate distribution reads the published plan

    async def _wait_gates(self, name: str, actions: list[GroupAction]) -> None:
        """Let the leaders hold the gates of the grants about to be pushed (bounded)."""
        needs: dict[tuple[str, int], int] = {}
        for action in actions:
            if isinstance(action, PushAssignment):
                needs.update((g.tp, g.grant_epoch) for g in action.assigned)
        if self.gates is None or not needs:
            return
        if not await self.gates.wait_gates(name, needs, GATE_WAIT_S):
            self.metrics(name).gate_wait_timeouts += 1
            log.info("pushing grants before the leaders hold their gates group=%s", name)

    def _count_plan(self, name: str, old: ConsumerGroupStatus, new: ConsumerGroupStatus) -> None:
        """Metrics of a published plan: a rebalance, and partitions losing their holder."""
        metrics = self.metrics(name)
        if new.generation != old.generation:
            metrics.rebalances += 1
        held = {g.tp: g.member_id for g in new.assignment if not g.revoking}
        before = {g.tp: g.member_id for g in old.assignment}
        counts = self._topics()
        lost = {tp for tp in before if tp not in held}
        lost |= {g.tp for g in new.assignment if g.revoking}
        lost |= {tp for tp, m in held.items() if before.get(tp, m) != m}  # a dead holder
        metrics.forget({tp for tp in lost if tp[1] >= counts.get(tp[0], 0)})
        metrics.forget({tp for tp, m in held.items() if before.get(tp) == m})
        metrics.lost_holder({tp for tp in lost if tp[1] < counts.get(tp[0], 0)}, self.clock())

    def _sync_sessions(self, name: str) -> None:
        """Sessions follow the published member list (joins bind, leaves unbind)."""
        group = self._groups[name]
        sessions = self._sessions.setdefault(name, {})
        members = {m.member_id for m in group.status.members}
        for member_id in list(sessions):
            if member_id not in members:
                sessions.pop(member_id)
        for timers in (self._deadlines, self._rebalance):
            for key in [k for k in timers if k[0] == name and k[1] not in members]:
                del timers[key]

    def _unbind(self, name: str, member_id: str, connection: int | None) -> None:
        """End a session (if still on ``connection``): the member is away, not gone."""
        sessions = self._sessions.get(name, {})
        if connection is not None and sessions.get(member_id) == connection:
            sessions.pop(member_id)

    def _fence(self, action: FenceMember) -> None:
        sessions = self._sessions.get(action.group, {})
        if sessions.get(action.member_id) == action.connection:
            sessions.pop(action.member_id)
        stream = self._streams.pop((action.group, action.connection), None)
        if stream is not None:
            stream.queue.put_nowait(
                FencedMemberError(f"member {action.member_id}: {action.reason}")
            )

    def _push(self, action: PushAssignment) -> None:
        key = (action.group, action.connection)
        stream = self._streams.get(key)
        if stream is None or stream.member_id != action.member_id:
            return
        # The reducer pushes to a connection only once it accepted the member there.
        sessions = self._sessions.setdefault(action.group, {})
        group = self._groups[action.group]
        if sessions.get(action.member_id) != action.connection:
            sessions[action.member_id] = action.connection
            self._deadlines[(action.group, action.member_id)] = self.clock() + self._session_s(
                group
            )
        push = c.GroupAssignment(
            action.generation,
            action.member_epoch,
            action.heartbeat_interval_ms,
            action.session_timeout_ms,
            c.grant_list(action.assigned),
            c.grant_list(action.revoke),
        )
        stream.last = push
        stream.queue.put_nowait(push)
        self.metrics(action.group).granted({g.tp for g in action.assigned}, self.clock())
        if action.revoke:
            deadline = self.clock() + group.spec.rebalance_timeout_ms / 1000
            self._rebalance[(action.group, action.member_id)] = (action.member_epoch, deadline)
        else:
            self._rebalance.pop((action.group, action.member_id), None)

    def _push_view(self, name: str, member_id: str, connection: int) -> None:
        group = self._groups.get(name) or self.group(name)
        if group is None:
            return
        member = group.status.member(member_id)
        if member is None:
            return
        assigned, revoke = view_of(group.status, member_id)
        self._push(
            PushAssignment(
                name,
                member_id,
                connection,
                group.status.generation,
                member.member_epoch,
                assigned,
                revoke,
                group.spec.heartbeat_interval_ms,
                group.spec.session_timeout_ms,
            )
        )

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(_SWEEP_S)
            await self.expire_due()

    async def expire_due(self) -> None:
        """Expire sessions and rebalances whose deadline passed (the sweeper's step)."""
        now = self.clock()
        for (name, member_id), deadline in list(self._deadlines.items()):
            if deadline <= now:
                self._deadlines.pop((name, member_id), None)
                conn = self._sessions.get(name, {}).get(member_id)
                await self._guarded(
                    name, MemberExpired(member_id, conn, ExpiryCause.SESSION_TIMEOUT)
                )
                self._unbind(name, member_id, conn)
        for (name, member_id), (epoch, deadline) in list(self._rebalance.items()):
            if deadline <= now:
                self._rebalance.pop((name, member_id), None)
                await self._guarded(name, RebalanceTimedOut(member_id, epoch))

    async def _guarded(self, name: str, event: GroupEvent) -> None:
        try:
            await self._run(name, event)
        except Exception:  # a timer must never kill the sweeper
            log.exception("group event failed group=%s event=%r", name, event)

    # -- helpers -----------------------------------------------------------------------------

    async def _create(self, msg: c.GroupJoinRequest) -> None:
        spec: dict[str, Any] = self.defaults.model_dump()
        if msg.session_timeout_ms is not None:
            spec["session_timeout_ms"] = msg.session_timeout_ms
            spec["heartbeat_interval_ms"] = min(
                spec["heartbeat_interval_ms"], max(500, msg.session_timeout_ms // 3)
            )
        if msg.rebalance_timeout_ms is not None:
            spec["rebalance_timeout_ms"] = msg.rebalance_timeout_ms
        await self._create_group(ConsumerGroup.new(msg.group, ConsumerGroupSpec(**spec)))

    async def create_external(self, name: str) -> ConsumerGroup:
        """Create a progress-only group (a Spark query's ``progressGroup``), or return the
        group of that name a concurrent request created."""
        spec = ConsumerGroupSpec(kind=GroupKind.EXTERNAL)
        status = ConsumerGroupStatus(state=GroupState.EXTERNAL)
        return await self._create_group(ConsumerGroup.new(name, spec, status))

    async def _create_group(self, group: ConsumerGroup) -> ConsumerGroup:
        """Store a new group (or read the one that exists) and know it at once, before the
        local store's mirror of the KV sees it (a describe right after must find it)."""
        stored: Any
        try:
            stored = await self.kv.create(group)
            log.info("group created group=%s kind=%s", group.name, group.spec.kind.value)
        except ConflictError:
            stored = await self.kv.get(GROUP_KIND, group.name)
            if stored is None:
                raise UnknownGroupError(
                    f"group {group.name!r} was deleted while being created"
                ) from None
        assert isinstance(stored, ConsumerGroup)
        self._groups[group.name] = stored
        self._deleted.pop(group.name, None)
        return stored

    def _known(self, name: str, member_id: str, connection: int) -> ConsumerGroup:
        group = self.group(name)
        if group is None or self._sessions.get(name, {}).get(member_id) != connection:
            raise UnknownMemberError(
                f"member_id: {member_id} has no session in group {name!r} on this connection"
            )
        return group

    def _generation(self, name: str) -> int:
        group = self.group(name)
        return 0 if group is None else group.status.generation

    def _topics(self) -> dict[str, int]:
        return {t.name: t.spec.partitions for t in self.store.topics()}

    @staticmethod
    def _session_s(group: ConsumerGroup) -> float:
        return group.spec.session_timeout_ms / 1000


def _tps(value: list[dict[str, Any]]) -> tuple[tuple[str, int], ...]:
    return c.tp_list(value, "owned")
