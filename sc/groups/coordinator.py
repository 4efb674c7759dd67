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

This module is the I/O loop (locks, the KV, the clock, the gate wait). The session
table and its deadlines are ``sc.groups.sessions``; what the coordinator decides around
the reducer without I/O (topic changes to events, a new group's spec, a push's and a
heartbeat's contents) is ``sc.groups.decisions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
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
    check_epoch,
    reduce,
)
from sc.groups.decisions import (
    gate_needs,
    groups_touched,
    heartbeat_reply,
    join_spec,
    owned_partitions,
    topic_events,
    view_push,
)
from sc.groups.metrics import GroupMetrics
from sc.groups.sessions import MemberStream, Sessions
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
        self._sessions = Sessions()
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
                self._sessions.set_deadline(obj.name, member.member_id, now + _session_s(obj))
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
        return self._sessions.live(name)

    # -- member requests -------------------------------------------------------------------

    async def join(self, msg: c.GroupJoinRequest, connection: int, host: str) -> MemberStream:
        """Open a member session; the returned stream already holds the first push.

        Raises:
            FluvioError: the join was refused (``Reject``); nothing changed.
        """
        stream = MemberStream(msg.group, msg.member_id, connection)
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
            previous = self._sessions.attach(stream)
            try:
                await self._reduce_locked(msg.group, event)
            except BaseException:
                self._sessions.restore(stream, previous)
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
        owned = owned_partitions(msg.owned)
        check_epoch(group.status, msg.member_id, msg.member_epoch, owned)
        deadline = self.clock() + _session_s(group)
        self._sessions.set_deadline(msg.group, msg.member_id, deadline)
        return heartbeat_reply(group, msg.member_id)  # check_epoch passed: a member

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
        self._sessions.unbind(msg.group, msg.member_id, connection)
        group = self.group(msg.group)
        if group is not None and group.status.member(msg.member_id) is not None:
            # A static member's pause: it keeps its grants for one session timeout.
            deadline = self.clock() + _session_s(group)
            self._sessions.set_deadline(msg.group, msg.member_id, deadline)
        self._sessions.end_stream(msg.group, connection)
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
        for group in self._sessions.closed(connection):
            for member_id in self._sessions.members_on(group, connection):
                event = MemberExpired(member_id, connection, ExpiryCause.CONNECTION_CLOSED)
                obj = self.group(group)
                if obj is not None:  # a static member keeps its grants this long
                    deadline = self.clock() + _session_s(obj)
                    self._sessions.set_deadline(group, member_id, deadline)
                await self._guarded(group, event)
                self._sessions.unbind(group, member_id, connection)
            self._sessions.drop_stream(group, connection)

    def on_changes(self, changes: list[Change], resync: bool) -> None:
        """Dispatcher listener: topic creations, growth and deletions feed the groups."""
        events = topic_events(changes)
        if not events:
            return
        loop = asyncio.get_running_loop()
        for name, event in groups_touched(self._groups, events):
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
                    members = {m.member_id for m in stored.status.members}
                    self._sessions.sync(name, members)
                    if before is not None:
                        self.metrics(name).published(
                            before.status, stored.status, self._topics(), self.clock()
                        )
                case FenceMember():
                    error = FencedMemberError(f"member {action.member_id}: {action.reason}")
                    self._sessions.fence(action.group, action.member_id, action.connection, error)
                case PushAssignment():
                    if not waited:  # once per event, for every push's grants
                        waited = True
                        await self._wait_gates(name, actions)
                    self._push(action)
                case _:
                    pass  # gates: the SC's gate distribution reads the published plan

    async def _wait_gates(self, name: str, actions: list[GroupAction]) -> None:
        """Let the leaders hold the gates of the grants about to be pushed (bounded)."""
        needs = gate_needs(actions)
        if self.gates is None or not needs:
            return
        if not await self.gates.wait_gates(name, needs, GATE_WAIT_S):
            self.metrics(name).gate_wait_timeouts += 1
            log.info("pushing grants before the leaders hold their gates group=%s", name)

    def _push(self, action: PushAssignment) -> None:
        stream = self._sessions.stream_for(action)
        if stream is None:
            return
        group = self._groups[action.group]
        rebalance_s = group.spec.rebalance_timeout_ms / 1000
        self._sessions.push(stream, action, self.clock(), _session_s(group), rebalance_s)
        self.metrics(action.group).granted({g.tp for g in action.assigned}, self.clock())

    def _push_view(self, name: str, member_id: str, connection: int) -> None:
        group = self._groups.get(name) or self.group(name)
        push = None if group is None else view_push(group, member_id, connection)
        if push is not None:
            self._push(push)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(_SWEEP_S)
            await self.expire_due()

    async def expire_due(self) -> None:
        """Expire sessions and rebalances whose deadline passed (the sweeper's step)."""
        now = self.clock()
        for name, member_id in self._sessions.due_sessions(now):
            self._sessions.clear_deadline(name, member_id)
            conn = self._sessions.connection(name, member_id)
            await self._guarded(name, MemberExpired(member_id, conn, ExpiryCause.SESSION_TIMEOUT))
            self._sessions.unbind(name, member_id, conn)
        for name, member_id, epoch in self._sessions.due_rebalances(now):
            self._sessions.clear_rebalance(name, member_id)
            await self._guarded(name, RebalanceTimedOut(member_id, epoch))

    async def _guarded(self, name: str, event: GroupEvent) -> None:
        try:
            await self._run(name, event)
        except Exception:  # a timer must never kill the sweeper
            log.exception("group event failed group=%s event=%r", name, event)

    # -- helpers -----------------------------------------------------------------------------

    async def _create(self, msg: c.GroupJoinRequest) -> None:
        spec = join_spec(self.defaults, msg)
        await self._create_group(ConsumerGroup.new(msg.group, spec))

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
        if group is None or self._sessions.connection(name, member_id) != connection:
            raise UnknownMemberError(
                f"member_id: {member_id} has no session in group {name!r} on this connection"
            )
        return group

    def _generation(self, name: str) -> int:
        group = self.group(name)
        return 0 if group is None else group.status.generation

    def _topics(self) -> dict[str, int]:
        return {t.name: t.spec.partitions for t in self.store.topics()}


def _session_s(group: ConsumerGroup) -> float:
    return group.spec.session_timeout_ms / 1000
