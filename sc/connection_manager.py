"""Connection manager (CM): the SC's side of every SPU connection.

Theory of operation (seed ``003``, "Connection Manager"):

- **Cache.** The SPU and partition controllers hand the CM SPUs (spec and status) and
  partition specs as actions (``CmAddSpu``, ``CmAddPartition``, ``CmLeaderChange``...).
  A replica entry carries the partition's leader epoch; the cache never takes an older
  one than it holds (a spec change read from before an election keeps the new leader).
  The CM keeps them (SPUs by id, partitions as ``Replica`` entries, an index SPU id ->
  the partitions it holds) and queues the change for each connected SPU concerned: a
  partition change for the SPUs holding it, an SPU change (e.g. ``Online`` ->
  ``Offline``) for every connected SPU, one entry per SPU whatever the topic count.
- **Setup.** An SPU presents its id and its own secret. Only an SPU id in the cache
  (registered in the KV) whose spec holds the verifier of that secret is accepted
  (``spark_stream.spu_identity``): an SPU cannot speak for another id. Anything else is
  refused with ``UnauthorizedError`` and logged. An accepted SPU gets a ``SpuSession``; the CM tells
  the controllers ``SpuConnected`` (they mark it ``Online``). A second connection for
  an id already connected **replaces** the first, which is closed: a restarted SPU must
  not wait for its dead predecessor to time out.
- **Pushes.** A session's ``pushes()`` (``sc.spu_session``) yields ``SpuConnectAccepted``, a full
  ``UpdateSpus`` and a full ``UpdateReplicas``, then incremental updates. Every
  ``UpdateSpus`` carries, for each SPU in it, the key the session's SPU shares with that
  SPU (``pair_key`` of the CM's in-memory master key): the SPU private port
  authenticates peers with it. Verifiers are never pushed. Changes queued
  while the SPU is slow are coalesced per SPU id and per partition, so a slow SPU gets
  fewer, larger pushes and never an unbounded backlog.
- **Deleted partitions.** A replica that moves away keeps its storage on the SPU (it is
  reattached if it comes back); a deleted partition's storage goes, on every SPU. So
  ``CmDeletePartition`` queues a ``purge`` entry (name and uid) for *every* connected
  SPU, not only the holders (an SPU may keep the storage of a replica that moved away).
  An SPU that was away reports the replica directories it has (``stored``) when it
  connects; its full push purges those whose partition no longer exists with that uid.
  The cache is complete by then: the SC loads the whole KV before it accepts an SPU.
- **Delivery gates.** The CM also mirrors the consumer groups (``sync_groups``, fed by the
  local store's change feed) and keeps, per session, the gates it pushed. After every
  change of a group or of a partition's leader it derives the gates each leader must
  hold (``sc.gates``) and queues the difference as ``UpdateGates``, pushed **before**
  the ``UpdateReplicas`` of the same batch: a new leader gets its gates with the
  leadership (until then it fails closed). A connect gets a full ``UpdateGates`` before
  the full ``UpdateReplicas``; a deleted group is queued as ``deleted_groups``.
- **Live replica status.** ``UpdateLrs`` entries from the partition's current leader are
  forwarded as ``LrsUpdate`` events (unchanged repeats are dropped); others are rejected.
  When a partition's *stored* status changes (``forget_reports``, from the mirror's change
  feed) its last report is forgotten, so the leader's next periodic report is forwarded
  and compared with what was stored: the controller skips a report equal to the mirror,
  and a report that arrived while an older one's write was still on its way to the
  mirror would otherwise be skipped for good (a follower left out of sync in the store
  while its leader counts it in sync, seen after SPUs were dropped at 1,000 partitions).
- **Failure.** When the connection ends, or the SPU stays silent past
  ``heartbeat_timeout_s`` (``expired``), the session is detached and the controllers hear
  ``SpuDisconnected`` (they mark it ``Offline`` and elect new leaders). Silence is
  counted in time the SC could have heard the SPU: a sweep that runs late (the SC's loop
  was blocked) excuses every session for its lateness (``sc.liveness``).

Everything here is synchronous bookkeeping on the event loop; sockets belong to
``sc.private_api``, which calls in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from sc.actions import (
    CmAction,
    CmAddPartition,
    CmAddSpu,
    CmDeletePartition,
    CmDeleteSpu,
    CmLeaderChange,
    CmUpdatePartition,
    CmUpdateSpu,
)
from sc.controllers.events import ControllerEvent, LrsUpdate, SpuConnected, SpuDisconnected
from sc.gates import GateView, desired_gates, gate_changes, group_gates, group_topics
from sc.liveness import excuse, sweep_interval_s, sweep_overrun
from sc.spu_session import SpuSession
from spark_stream.errors import UnauthorizedError
from spark_stream.models import (
    ConsumerGroup,
    Spu,
    matching_topics,
    parse_partition_name,
    partition_name,
)
from spark_stream.protocol import GateEntry
from spark_stream.protocol.control import (
    LrsStatus,
    Replica,
    ReplicaId,
)
from spark_stream.spu_identity import new_master_key, pair_key, secret_matches

__all__ = ["ConnectionManager"]

log = logging.getLogger(__name__)


class ConnectionManager:
    """SPU/partition cache, SPU sessions, and the events they raise for the controllers.

    Args:
        heartbeat_timeout_s: silence after which a session is dropped.
        emit: hands an event to the controller loop (``Dispatcher.submit``).
        revision: returns the KV revision the SC's mirror reflects (stamped on pushes).
        clock: monotonic seconds (tests pass a fake one).
        master_key: derives the SPU pair keys; default a random one (a new SC process
            hands out new keys; SPUs get them when they reconnect).
    """

    def __init__(
        self,
        heartbeat_timeout_s: float,
        emit: Callable[[ControllerEvent], None],
        *,
        revision: Callable[[], int] = lambda: 0,
        clock: Callable[[], float] = time.monotonic,
        master_key: bytes | None = None,
    ) -> None:
        self._master = master_key or new_master_key()
        self.store_id = ""
        """The KV store's identity, sent to each SPU on accept (set at the SC's start)."""
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.sweep_interval_s = sweep_interval_s(heartbeat_timeout_s)
        """The period of ``close_expired`` (the private API's watchdog)."""
        self._last_sweep: float | None = None
        self._emit = emit
        self.revision = revision
        self.clock = clock
        self.spus: dict[int, Spu] = {}
        self.replicas: dict[str, Replica] = {}
        self._held: dict[int, set[str]] = {}  # SPU id -> names of the partitions it holds
        self.sessions: dict[int, SpuSession] = {}
        self._last_lrs: dict[str, LrsStatus] = {}
        self.groups: dict[str, ConsumerGroup] = {}
        self._topic_parts: dict[str, set[int]] = {}  # topic -> its partitions' indexes
        self._group_topics: dict[str, set[str]] = {}  # group -> topics it has gates on
        self._topic_groups: dict[str, set[str]] = {}  # topic -> groups with gates on it
        self._pattern_groups: set[str] = set()  # groups with a pattern subscription
        self._gate_acks = asyncio.Event()  # set (and replaced) at each applied report

    # -- cache, fed by controller actions ---------------------------------------------

    def apply(self, action: CmAction) -> None:
        """Carry out one connection-manager action from a controller."""
        match action:
            case CmAddSpu(spu=spu) | CmUpdateSpu(spu=spu):
                self.spus[spu.spu_id] = spu
                for session in self.sessions.values():
                    session.queue_spu(spu.spu_id, spu)
            case CmDeleteSpu(spu_id=spu_id):
                known = self.spus.get(spu_id)
                if known is not None and known.name != action.name:
                    return  # another object now holds that id
                self.spus.pop(spu_id, None)
                gone = self.sessions.get(spu_id)
                if gone is not None:
                    log.info("spu unregistered, closing its connection spu=%d", spu_id)
                    gone.close()
                for other in self.sessions.values():
                    other.queue_spu(spu_id, None)
            case CmAddPartition(partition=p) | CmUpdatePartition(partition=p):
                self._last_lrs.pop(p.name, None)
                self._set_replica(self._not_older(Replica.from_partition(p)))
                self._topic_changed(p.name)
            case CmLeaderChange(name=name, leader=leader, leader_epoch=epoch):
                self._last_lrs.pop(name, None)
                old = self.replicas.get(name)
                if old is not None:
                    replica = Replica(name, leader, old.spec, old.revision, old.uid, epoch)
                    self._set_replica(replica)
                    self._topic_changed(name)
            case CmDeletePartition(name=name):
                old = self.replicas.pop(name, None)
                self._last_lrs.pop(name, None)
                holders = set(action.replicas) | (set(old.replicas) if old else set())
                for spu_id in holders:
                    self._held.get(spu_id, set()).discard(name)
                    if (holder := self.sessions.get(spu_id)) is not None:
                        holder.queue_replica(name, None)
                purged = ReplicaId(name, action.uid)
                for session in self.sessions.values():
                    session.queue_purge(purged)
                topic, index = parse_partition_name(name)
                left = self._topic_parts.get(topic, set())
                left.discard(index)
                if not left:
                    self._topic_parts.pop(topic, None)
                self._topic_changed(name)
            case _:
                raise TypeError(f"not a connection-manager action: {action!r}")

    def _not_older(self, replica: Replica) -> Replica:
        """``replica`` with the cached leader and epoch when those are newer.

        A spec change may be read from an object stored before an election's status
        write landed; pushing its leader would roll the SPUs back to a deposed one.
        """
        old = self.replicas.get(replica.name)
        if old is None or old.uid != replica.uid or old.leader_epoch <= replica.leader_epoch:
            return replica
        return Replica(
            replica.name, old.leader, replica.spec, replica.revision, replica.uid, old.leader_epoch
        )

    def _set_replica(self, replica: Replica) -> None:
        name = replica.name
        old = self.replicas.get(name)
        self.replicas[name] = replica
        topic, index = parse_partition_name(name)
        self._topic_parts.setdefault(topic, set()).add(index)
        before = set(old.replicas) if old is not None else set()
        after = set(replica.replicas)
        for spu_id in before - after:
            self._held.get(spu_id, set()).discard(name)
            if (session := self.sessions.get(spu_id)) is not None:
                session.queue_replica(name, None)
        for spu_id in after:
            self._held.setdefault(spu_id, set()).add(name)
            if (session := self.sessions.get(spu_id)) is not None:
                session.queue_replica(name, replica)

    # -- delivery gates ----------------------------------------------------------------

    def sync_groups(self, groups: Iterable[ConsumerGroup]) -> None:
        """Take the consumer groups as they are now (the local store's), and push the
        gates that follow: changed plans, and deleted groups' gates dropped."""
        current = {group.name: group for group in groups}
        for name in sorted(set(self.groups) - set(current)):
            for session in self.sessions.values():
                session.gates_sent.pop(name, None)
                session.queue_gates([], deleted_groups=[name])
            self._unindex(name)
        changed = [
            name
            for name, group in current.items()
            if (old := self.groups.get(name)) is not group and old != group
        ]
        self.groups = current
        self.refresh_gates(changed)

    def desired_gates(self) -> dict[int, GateView]:
        """The gates each leader SPU must hold now (see ``sc.gates``)."""
        leaders = {name: r.leader for name, r in self.replicas.items()}
        return desired_gates(self.groups.values(), leaders)

    def refresh_gates(self, names: Iterable[str] | None = None) -> None:
        """Queue, for every connected SPU, the gates of groups ``names`` (default: all)
        it lacks after a plan or leader change.

        Only the named groups are recomputed: a partition's change touches the groups
        with gates on its topic (``_topic_changed``), a plan change its own group.
        """
        chosen = sorted(self.groups if names is None else set(names) & set(self.groups))
        for name in chosen:
            self._index(name)
        if not chosen or not self.sessions:
            return
        desired: dict[int, dict[str, GateView]] = {}
        for name in chosen:
            parts = {t: sorted(self._topic_parts.get(t, ())) for t in self._group_topics[name]}
            for (topic, index), entry in group_gates(self.groups[name], parts).items():
                replica = self.replicas.get(partition_name(topic, index))
                if replica is not None and replica.leader is not None:
                    view = desired.setdefault(replica.leader, {}).setdefault(name, {})
                    view[(name, topic, index)] = entry
        for spu_id, session in self.sessions.items():
            mine = desired.get(spu_id, {})
            led: set[tuple[str, int]] | None = None
            changes: list[GateEntry] = []
            for name in chosen:
                want, sent = mine.get(name, {}), session.gates_sent.get(name, {})
                if want == sent:
                    continue
                if led is None:
                    led = self._led(spu_id)
                generation = {name: self.groups[name].status.generation}
                changes += gate_changes(sent, want, generation, led)
                if want:
                    session.gates_sent[name] = want
                else:
                    session.gates_sent.pop(name, None)
            if changes:
                session.queue_gates(changes)

    def _topic_changed(self, name: str) -> None:
        """A partition of this topic changed (created, moved, deleted): its groups' gates."""
        topic, _ = parse_partition_name(name)
        names = set(self._topic_groups.get(topic, ()))
        for group in self._pattern_groups:  # a new topic may match a pattern
            if any(matching_topics(m.pattern, (topic,)) for m in self.groups[group].status.members):
                names.add(group)
        if names:
            self.refresh_gates(names)

    def _led(self, spu_id: int) -> set[tuple[str, int]]:
        return {
            parse_partition_name(name)
            for name in self._held.get(spu_id, ())
            if self.replicas[name].leader == spu_id
        }

    def _index(self, name: str) -> None:
        group = self.groups[name]
        old = self._group_topics.get(name, set())
        new = group_topics(group, self._topic_parts.keys())
        for topic in old - new:
            self._topic_groups.get(topic, set()).discard(name)
        for topic in new - old:
            self._topic_groups.setdefault(topic, set()).add(name)
        self._group_topics[name] = new
        if any(m.pattern is not None for m in group.status.members):
            self._pattern_groups.add(name)
        else:
            self._pattern_groups.discard(name)

    def _unindex(self, name: str) -> None:
        for topic in self._group_topics.pop(name, set()):
            self._topic_groups.get(topic, set()).discard(name)
        self._pattern_groups.discard(name)

    def gates_applied(
        self,
        session: SpuSession,
        generations: Mapping[str, int],
        rejections: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """An SPU reported the plan generation it applied per group (and its gates'
        refusals): wake the waiters."""
        session.applied_generations = dict(generations)
        session.gate_rejections = {g: dict(c) for g, c in (rejections or {}).items()}
        acks, self._gate_acks = self._gate_acks, asyncio.Event()
        acks.set()

    def gates_held(self, group: str, needs: Mapping[tuple[str, int], int]) -> bool:
        """Whether each partition's leader reported applying ``group``'s plan at least
        at the generation ``needs`` gives for it (a grant's epoch).

        A partition without a leader, or whose leader is not connected, cannot answer
        and does not hold up the others (its fetches fail closed until it does).
        """
        for (topic, index), generation in needs.items():
            replica = self.replicas.get(partition_name(topic, index))
            leader = None if replica is None else replica.leader
            session = None if leader is None else self.sessions.get(leader)
            if session is not None and session.applied_generations.get(group, -1) < generation:
                return False
        return True

    def group_rejections(self, group: str) -> dict[str, int]:
        """``group``'s gate refusals per reason, summed over the connected SPUs."""
        total = {"not_ready": 0, "fenced": 0}
        for session in self.sessions.values():
            for reason, count in session.gate_rejections.get(group, {}).items():
                total[reason] = total.get(reason, 0) + count
        return total

    async def wait_gates(
        self, group: str, needs: Mapping[tuple[str, int], int], timeout_s: float
    ) -> bool:
        """Wait until ``gates_held``, at most ``timeout_s``; return whether it holds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self.gates_held(group, needs):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                async with asyncio.timeout(remaining):
                    await self._gate_acks.wait()
            except TimeoutError:
                return self.gates_held(group, needs)
        return True

    def replicas_of(self, spu_id: int) -> list[Replica]:
        """The replicas ``spu_id`` holds, sorted by partition name."""
        return [self.replicas[name] for name in sorted(self._held.get(spu_id, ()))]

    def stale(self, stored: Iterable[ReplicaId]) -> list[ReplicaId]:
        """The ``stored`` replicas whose partition no longer exists with that uid.

        A replica stored on an SPU that does not hold it (it moved away) is not stale
        while its partition exists: it is reattached if it comes back.
        """
        out = []
        for entry in stored:
            current = self.replicas.get(entry.name)
            if current is None or current.uid != entry.uid:
                out.append(entry)
        return out

    # -- connections -------------------------------------------------------------------

    def authorize(self, spu_id: int, secret: str) -> Spu:
        """The registered SPU for ``spu_id`` if ``secret`` is that SPU's own secret.

        Raises:
            UnauthorizedError: no SPU registered with that id, none registered with a
                secret, or a secret that is not this SPU's (e.g. another SPU's).
        """
        spu = self.spus.get(spu_id)
        if spu is None:
            raise UnauthorizedError(f"SPU {spu_id} is not registered")
        if spu.spec.secret_verifier is None:
            raise UnauthorizedError(
                f"SPU {spu_id} has no secret registered; register it again with a secret"
            )
        if not secret_matches(secret, spu.spec.secret_verifier):
            raise UnauthorizedError(f"SPU {spu_id}: wrong secret (not the one registered for it)")
        return spu

    def may_rebuild(self, spu_id: int, secret: str) -> None:
        """Refuse a report of forgotten replicas from a peer that is not SPU ``spu_id``.

        An SPU the store still knows must present its own secret; one the store forgot
        (its data was lost, the verifier with it) is taken on its word, and the rebuild
        registers it again with the verifier of the secret it presented.

        Raises:
            UnauthorizedError: a known SPU's wrong secret.
        """
        if spu_id in self.spus:
            self.authorize(spu_id, secret)

    def peer_keys(self, spu_id: int, peers: Iterable[Spu]) -> dict[int, bytes]:
        """The key ``spu_id`` shares with each of ``peers`` (see the module doc)."""
        return {p.spu_id: pair_key(self._master, spu_id, p.spu_id) for p in peers}

    def attach(
        self, spu_id: int, closer: Callable[[], None], stored: Iterable[ReplicaId] = ()
    ) -> SpuSession:
        """Bind a new authorised connection to ``spu_id``, replacing an older one.

        Args:
            spu_id: the SPU the connection speaks for.
            closer: closes the connection.
            stored: the replica directories the SPU reported (see ``stale``).
        """
        old = self.sessions.get(spu_id)
        session = SpuSession(self, spu_id, closer, stored)
        self.sessions[spu_id] = session
        if old is not None:
            log.warning("spu reconnected, replacing its previous connection spu=%d", spu_id)
            old.close()
        else:
            self._emit(SpuConnected(spu_id))
        return session

    def detach(self, session: SpuSession, cause: BaseException | str | None = None) -> None:
        """Forget a session whose connection ended; idempotent.

        Only the session that currently speaks for its SPU raises ``SpuDisconnected``: a
        replaced session leaves quietly.
        """
        session.active = False
        session._wakeup.set()
        if self.sessions.get(session.spu_id) is not session:
            return
        del self.sessions[session.spu_id]
        # Its next report must reach the controllers even if unchanged: the SC may
        # have marked its partitions Offline meanwhile.
        gone = session.spu_id
        stale = [name for name, lrs in self._last_lrs.items() if lrs.status.leader == gone]
        for name in stale:
            del self._last_lrs[name]
        log.info("spu disconnected spu=%d cause=%s", session.spu_id, cause)
        self._emit(SpuDisconnected(session.spu_id))

    def connected_ids(self) -> frozenset[int]:
        """Ids of the SPUs connected now."""
        return frozenset(self.sessions)

    def expired(self) -> list[SpuSession]:
        """Sessions silent for longer than ``heartbeat_timeout_s``."""
        limit = self.clock() - self.heartbeat_timeout_s
        return [s for s in self.sessions.values() if s.last_seen < limit]

    def close_expired(self) -> int:
        """Close every silent session (the server then detaches it); return how many.

        Called every ``sweep_interval_s``; a call later than that excuses the sessions
        for its lateness first (``sc.liveness``): the SC's loop could not run, so it
        could not hear them either.
        """
        now = self.clock()
        stall = sweep_overrun(self._last_sweep, now, self.sweep_interval_s)
        self._last_sweep = now
        if stall > 0:
            for session in self.sessions.values():
                session.last_seen = excuse(session.last_seen, stall, now)
            if stall >= 1.0:
                log.warning(
                    "sc loop stalled, not counted as spu silence stall_s=%.2f spus=%s",
                    stall,
                    sorted(self.sessions),
                )
        silent = self.expired()
        for session in silent:
            log.warning(
                "spu silent past heartbeat timeout, dropping it spu=%d timeout_s=%s",
                session.spu_id,
                self.heartbeat_timeout_s,
            )
            session.close()
        return len(silent)

    # -- live replica status -----------------------------------------------------------

    def forget_reports(self, names: Iterable[str] | None = None) -> None:
        """Forward the next report of partitions ``names`` (None: every partition) even
        if unchanged: their stored status changed (the mirror's change feed, a re-list),
        or the SC refused the report after all (a shrink not recorded in time)."""
        if names is None:
            self._last_lrs.clear()
            return
        for name in names:
            self._last_lrs.pop(name, None)

    def receive_lrs(self, spu_id: int, statuses: list[LrsStatus]) -> tuple[int, list[str]]:
        """Forward the entries ``spu_id`` may report; return (accepted, rejected names).

        An entry is accepted when the partition is known, the reporter is its current
        leader, names itself as leader and reports at the current leader epoch (a leader
        deposed meanwhile is refused, even if elected again since). Acceptance is what a
        leader waits for before it shrinks its in-sync set (Kafka's AlterPartition), so
        the SC's record of the set is never larger than what the leader commits with.
        Unchanged repeats are accepted but not forwarded again.
        """
        accepted, rejected = 0, []
        for entry in statuses:
            replica = self.replicas.get(entry.name)
            if (
                replica is None
                or entry.status.leader != spu_id
                or replica.leader != spu_id
                or entry.status.leader_epoch != replica.leader_epoch
            ):
                rejected.append(entry.name)
                continue
            accepted += 1
            if self._last_lrs.get(entry.name) == entry:
                continue
            self._last_lrs[entry.name] = entry
            st = entry.status
            self._emit(
                LrsUpdate(
                    entry.name, spu_id, st.lrs, st.leo, st.hw, st.log_start_offset, st.size, st.tier
                )
            )
        return accepted, rejected
